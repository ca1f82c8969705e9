// How long the waiting-room page takes to solve the door's challenge in headless Chromium: a
// measurement, not a test (BENCHMARKS.md). Against a running local stack:
//   cargo run --release --bin lineup-local &
//   BASE_URL=http://127.0.0.1:3000 node tests/browser/door-solve-time.mjs
// For each cost it sets a queue's challenge, then, in a page of that queue (its origin and
// CSP), fetches challenges and solves each in ALTCHA's own worker (wait/altcha.js), as the
// page does, one after the other. Prints the median and the spread.
import { createRequire } from 'node:module';

const { chromium } = createRequire(import.meta.url)('playwright-core');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

const BASE = process.env.BASE_URL || 'http://127.0.0.1:3000';
const RUNS = { 1000: 21, 20000: 7 };

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
try {
  for (const [cost, runs] of Object.entries(RUNS)) {
    const queue = `solve-${cost}`;
    const set = await fetch(`${BASE}/queues/${queue}/settings`, {
      method: 'PUT', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ challenge: 'on', challengeCostMin: Number(cost) }),
    });
    if (!set.ok) throw new Error(`settings: ${set.status}`);
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${BASE}/queues/${queue}/wait`);
    const times = await page.evaluate(async (runs) => {
      const out = [];
      for (let i = 0; i < runs; i++) {
        const challenge = await (await fetch(`challenge?userId=u${i}`)).json();
        const worker = new Worker('wait/altcha.js');
        const started = performance.now();
        await new Promise((resolve, reject) => {
          worker.onmessage = (m) => resolve(m.data);
          worker.onerror = reject;
          worker.postMessage({ type: 'work', challenge, counterStart: 0, counterStep: 1, timeout: 0 });
        });
        out.push(performance.now() - started);
        worker.terminate();
      }
      return out;
    }, runs);
    times.sort((a, b) => a - b);
    const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
    console.log(`cost ${cost}: median ${(at(0.5) / 1000).toFixed(2)} s over ${runs} solves (fastest ${(times[0] / 1000).toFixed(2)} s, slowest ${(times[times.length - 1] / 1000).toFixed(2)} s)`);
  }
} finally {
  await browser.close();
}
