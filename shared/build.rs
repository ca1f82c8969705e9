//! Ships the Lua scripts without their comments and indentation: Redis never reads them,
//! and every binary would carry them. Each script is written to `OUT_DIR/<module>/<name>`
//! line for line (a comment line becomes an empty line), so a line number in a Redis error
//! still points at the source.

use std::error::Error;
use std::fs;
use std::path::Path;

fn main() -> Result<(), Box<dyn Error>> {
    let out = std::env::var("OUT_DIR")?;
    for module in ["queue", "ranking", "coupon"] {
        let dir = Path::new("src").join(module);
        println!("cargo:rerun-if-changed={}", dir.display());
        fs::create_dir_all(Path::new(&out).join(module))?;
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|ext| ext == "lua") {
                let name = path.file_name().ok_or("a script without a name")?;
                let stripped: String = fs::read_to_string(&path)?
                    .lines()
                    .map(|line| {
                        let code = line.trim();
                        if code.starts_with("--") {
                            "\n".to_owned()
                        } else {
                            format!("{code}\n")
                        }
                    })
                    .collect();
                fs::write(Path::new(&out).join(module).join(name), stripped)?;
            }
        }
    }
    Ok(())
}
