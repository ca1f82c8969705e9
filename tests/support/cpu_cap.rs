//! A CPU cap on one process (a private `redis-server`): a cgroup of its own, limited by the
//! CPU controller, cgroup v1 (`cpu.cfs_quota_us`) or v2 (`cpu.max`). It needs root, as on a
//! fresh CI machine. Dropping it moves the process back and removes the cgroup, also when the
//! test fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where cgroup v1 mounts the CPU controller.
const V1: &str = "/sys/fs/cgroup/cpu";
/// Where cgroup v2 mounts its one hierarchy.
const V2: &str = "/sys/fs/cgroup";

/// A process held to `quota` of CPU time per `period`. Removed when dropped.
pub struct CpuCap {
    /// The cgroup made for the process.
    group: PathBuf,
    /// The cgroup it came from, where it goes back.
    home: PathBuf,
    pid: u32,
}

/// How often a capped process was held back, from its cgroup's `cpu.stat`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Throttling {
    /// Scheduling periods in which the process wanted CPU.
    pub periods: u64,
    /// Periods in which it used up its quota and was made to wait.
    pub throttled: u64,
}

impl Throttling {
    /// What happened between `before` and this reading.
    pub fn since(self, before: Throttling) -> Throttling {
        Throttling {
            periods: self.periods - before.periods,
            throttled: self.throttled - before.throttled,
        }
    }
}

impl CpuCap {
    /// Moves process `pid` into a new cgroup that lets it run `quota` of every `period`
    /// (cgroup v1 allows quotas from 1 ms). Fails, saying why, when neither cgroup version
    /// offers a CPU controller this process may write to.
    pub fn limit(pid: u32, quota: Duration, period: Duration) -> Result<CpuCap, String> {
        let name = format!("lineup-test-{}-{pid}", std::process::id());
        let (quota_us, period_us) = (quota.as_micros(), period.as_micros());
        if Path::new(V1).join("cpu.cfs_quota_us").exists() {
            let cap = CpuCap::make(Path::new(V1), &name, pid, |line| {
                let mut fields = line.splitn(3, ':');
                let controllers = fields.nth(1)?;
                controllers
                    .split(',')
                    .any(|c| c == "cpu")
                    .then(|| fields.next())?
            })?;
            write(&cap.group.join("cpu.cfs_period_us"), &period_us.to_string())?;
            write(&cap.group.join("cpu.cfs_quota_us"), &quota_us.to_string())?;
            write(&cap.group.join("cgroup.procs"), &pid.to_string())?;
            return Ok(cap);
        }
        let controllers =
            fs::read_to_string(Path::new(V2).join("cgroup.controllers")).map_err(|err| {
                format!("no cgroup v1 CPU controller at {V1}, and no cgroup v2 at {V2}: {err}")
            })?;
        if !controllers.split_whitespace().any(|c| c == "cpu") {
            return Err(format!(
                "no cgroup v1 CPU controller at {V1}, and cgroup v2 at {V2} offers none ({})",
                controllers.trim()
            ));
        }
        // The root's children get the CPU controller (a no-op when they have it already).
        write(&Path::new(V2).join("cgroup.subtree_control"), "+cpu")?;
        let cap = CpuCap::make(Path::new(V2), &name, pid, |line| line.strip_prefix("0::"))?;
        write(
            &cap.group.join("cpu.max"),
            &format!("{quota_us} {period_us}"),
        )?;
        write(&cap.group.join("cgroup.procs"), &pid.to_string())?;
        Ok(cap)
    }

    /// Makes cgroup `name` under `root`, noting the one `pid` is in now (the line of
    /// `/proc/<pid>/cgroup` that `path_in` reads a path from).
    fn make(
        root: &Path,
        name: &str,
        pid: u32,
        path_in: impl Fn(&str) -> Option<&str>,
    ) -> Result<CpuCap, String> {
        let membership = fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .map_err(|err| format!("/proc/{pid}/cgroup: {err}"))?;
        let home = membership
            .lines()
            .find_map(&path_in)
            .map(|path| root.join(path.trim_start_matches('/')))
            .ok_or_else(|| format!("process {pid} is in no cgroup of {}", root.display()))?;
        let group = root.join(name);
        fs::create_dir(&group).map_err(|err| format!("{}: {err}", group.display()))?;
        Ok(CpuCap { group, home, pid })
    }

    /// How often the process was held back so far.
    pub fn throttling(&self) -> Throttling {
        let stat = fs::read_to_string(self.group.join("cpu.stat")).unwrap_or_default();
        let field = |name: &str| {
            stat.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or(0)
        };
        Throttling {
            periods: field("nr_periods"),
            throttled: field("nr_throttled"),
        }
    }
}

impl Drop for CpuCap {
    fn drop(&mut self) {
        // The process may be gone already; its cgroup is then empty anyway.
        let _ = fs::write(self.home.join("cgroup.procs"), self.pid.to_string());
        for _ in 0..50 {
            if fs::remove_dir(&self.group).is_ok() || !self.group.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("could not remove the cgroup {}", self.group.display());
    }
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    fs::write(path, value).map_err(|err| format!("{}: {err}", path.display()))
}
