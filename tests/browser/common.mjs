// What every browser script shares: Chromium, the harness that asks tests/lineup/browser.rs
// to stop and start Redis ("lineup:redis stop" / "lineup:redis start" on stdout, answered by
// a line on stdin) and to take the live boards' snapshots ("lineup:snapshot", answered by the
// snapshot's time in ms), the stack's API, a browser context per buyer, and check(): axe-core, no
// raw value on screen, a screenshot. A script ends with endHarness() and done(), which
// fails on any CSP violation, script error or serious axe violation seen.
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createServer } from 'node:http';
import assert from 'node:assert/strict';

const require = createRequire(import.meta.url);
export const { chromium } = require('playwright-core');
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export const BASE = process.env.BASE_URL;
export const SHOTS = process.env.SCREENSHOTS || 'screenshots';
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
mkdirSync(SHOTS, { recursive: true });

const answers = createInterface({ input: process.stdin });
const waiting = [];
answers.on('line', (line) => waiting.shift()?.(line));
export function harness(command) {
  return new Promise((resolve) => {
    waiting.push(resolve);
    process.stdout.write('lineup:' + command + '\n');
  });
}

export async function api(method, path, body) {
  const r = await fetch(BASE + path, {
    method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

// fn()'s first truthy answer, asked every 100 ms (waitForFunction does not wait on a promise).
export async function until(fn, what, timeout = 20000) {
  for (const end = Date.now() + timeout; ; await new Promise((r) => setTimeout(r, 100))) {
    const answer = await fn();
    if (answer) return answer;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
  }
}

// Waits until the reaper has dropped every absent waiter of `queue`: its summary counts none.
export async function dropped(queue) {
  await until(async () => (await api('GET', `/queues/${queue}`)).body.waiting === 0, `${queue} has no waiter left`);
}

export const violations = [];
// Every state is checked by axe-core, run inside the page (through DevTools, so the page's
// CSP stays as served), and screenshotted. `every: true` counts a violation of any impact,
// not only the serious and critical.
export async function check(page, name, { every = false } = {}) {
  await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const serious = result.violations.filter((v) => every || v.impact === 'serious' || v.impact === 'critical');
  for (const v of serious) violations.push(`${name}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target).join(' ')}`);
  const shown = await page.evaluate(() => document.body.innerText);
  assert.doesNotMatch(shown, /null|undefined|NaN|\{[a-z]+\}|(wait|rank)\.[a-z]/, `${name} shows a raw value`);
  await page.screenshot({ path: `${SHOTS}/${name}.png` });
  console.log(`checked ${name}: ${serious.length} ${every ? '' : 'serious or critical '}violations`);
}

export const cspErrors = [];
export async function open(browser, options = {}) {
  const context = await browser.newContext({ locale: 'en-US', viewport: { width: 480, height: 720 }, ...options });
  const page = await context.newPage();
  page.on('console', (m) => { if (/Content.Security.Policy/i.test(m.text())) cspErrors.push(m.text()); });
  page.on('pageerror', (e) => cspErrors.push('page error: ' + e.message));
  return { context, page };
}

export async function join(page, user) {
  // Keyboard only: the form's field is reached with Tab, sent with Enter.
  await page.waitForSelector('#user');
  for (let i = 0; i < 5 && !(await page.evaluate(() => document.activeElement?.id === 'user')); i++) {
    await page.keyboard.press('Tab');
  }
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'user', 'Tab reaches the user id');
  await page.keyboard.type(user);
  await page.keyboard.press('Enter');
  // Once in a few runs the page stays on its form with no notice and the field no longer
  // holds what was typed (not understood yet: see the state() message when it happens).
  // Then it is typed again, once, and said on stderr.
  const sent = await page.waitForFunction(
    () => document.getElementById('lineup')?.dataset.state !== 'join' || document.querySelector('.notice'),
    null, { timeout: 15000 }).then(() => true, () => false);
  if (sent) return;
  const typed = await page.evaluate(() => ({ value: document.getElementById('user')?.value, focus: document.activeElement?.id }));
  console.error(`join: still on the form 15 s after Enter (field ${JSON.stringify(typed)}); typing ${user} again`);
  await page.fill('#user', user);
  await page.press('#user', 'Enter');
}

// A state may take a while to come when the browser shares two cores with other suites.
// On a timeout it says which state the page is in instead, and what it shows.
export async function state(page, s, timeout = 60000) {
  try {
    return await page.waitForSelector(`#lineup[data-state="${s}"]`, { timeout });
  } catch (e) {
    const seen = await page.evaluate(() => ({
      state: document.getElementById('lineup')?.dataset.state,
      headline: document.getElementById('headline')?.textContent,
      message: document.getElementById('message')?.textContent,
      notice: document.querySelector('.notice')?.textContent,
      typed: document.getElementById('user')?.value,
      focus: document.activeElement?.id,
      url: location.href,
    })).catch(() => ({}));
    throw new Error(`no state ${s} within ${timeout} ms; the page shows ${JSON.stringify(seen)}`, { cause: e });
  }
}
export const text = (page, selector) => page.textContent(selector);

// What the booking front end does with the fragment: send the token as x-queue-token.
export async function admission(page, queue) {
  return page.evaluate(async (q) => {
    const token = new URLSearchParams(location.hash.slice(1)).get('queueToken');
    const r = await fetch('/queues/' + q + '/admission', { headers: { 'x-queue-token': token } });
    return { status: r.status, body: await r.json() };
  }, queue);
}

// What the booking front end does with the fragment's admission JWT: send it as a bearer
// token to a route behind the JWT authorizer on lineup's issuer.
export async function seats(page, queue) {
  return page.evaluate(async (q) => {
    const jwt = new URLSearchParams(location.hash.slice(1)).get('admission');
    if (!jwt) return { status: 0, body: null };
    const r = await fetch('/queues/' + q + '/seats', { headers: { authorization: 'Bearer ' + jwt } });
    return { status: r.status, body: await r.json() };
  }, queue);
}

// The opening as a buyer in `locale` and `timeZone` reads it, by Chromium's own Intl (Node's
// ICU words Korean differently).
export function opensIn(page, at, locale, timeZone) {
  return page.evaluate(([at, locale, timeZone]) => new Intl.DateTimeFormat(locale, {
    weekday: 'short', year: 'numeric', month: 'short', day: 'numeric',
    hour: 'numeric', minute: '2-digit', timeZoneName: 'short', timeZone,
  }).format(at), [at.getTime(), locale, timeZone]);
}

// Sends each `[genre, at, {concert: seats}]` as payments of concerts mv-<concert>, all applied.
async function sellMoves(sales) {
  const events = sales.flatMap(([genre, at, seats]) => Object.entries(seats).map(([concert, n]) => ({
    version: '0', id: `move-${genre}-${concert}-${at.getTime()}`, 'detail-type': 'PaymentCompleted',
    source: 'lineup.payments', account: '123456789012', time: new Date().toISOString(), region: 'us-east-1',
    resources: [], detail: {
      paymentId: `move-${genre}-${concert}-${at.getTime()}`, concertId: `mv-${concert}`, seats: n,
      genres: [genre], completedAt: at.toISOString(),
    },
  })));
  const sent = await api('POST', '/events', events);
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  assert.deepEqual(sent.body.results.map((r) => r.result), events.map(() => 'applied'), JSON.stringify(sent.body));
}

// The board `path` reads `rows` ([concertId, rank, movement]) within a minute: the tick folds
// what the apply calls left every 5 s in the local stack.
async function boardReads(path, rows) {
  const want = JSON.stringify(rows);
  let got;
  await until(async () => {
    const read = await api('GET', path);
    got = JSON.stringify(read.body.items?.map((i) => [i.concertId, i.rank, i.movement]));
    return got === want;
  }, `${path} to read ${want}`, 60000)
    .catch((e) => { throw new Error(`${e.message}; it reads ${got}`); });
}

// After sellWithMovement: the harness takes the next hour's snapshot of the live boards
// (answering with its time, ms), then mv-a sells 5 more and leads the last-24h board of
// `moves`. Returns that board's genre, its rows against the snapshot, and the snapshot's time.
export async function liveMovement() {
  const at = Number(await harness('snapshot'));
  assert.ok(at > Date.now(), `the snapshot's time: ${at}`);
  await sellMoves([['moves', new Date(), { a: 5 }]]);
  const down = { kind: 'down', by: 1 };
  const same = { kind: 'same' };
  const rows = [['mv-a', 1, { kind: 'up', by: 3 }], ['mv-c', 2, down], ['mv-b', 3, down], ['mv-d', 4, down], ['mv-e', 5, same], ['mv-f', 6, same]];
  await boardReads('/rankings/last-24h?genre=moves', rows);
  return { genre: 'moves', rows, at };
}

// Boards with movement (docs/rankings.md, "Movement"), paid as the booking system reports
// sales (POST /events), each board in a genre of its own so that no other sale of a script
// lands on it. Returns what each board must show, best first: the concert, its rank, and its
// movement since the bucket before.
//   daily, genre moves: yesterday a 5, b 4, c 3, d 2, f 1; today c 9, b 8, d 7, a 6, e 5, f 4
//   weekly, genre moves-week: last week x 2, y 1; this week y 5, x 3
//   monthly, genre moves-month: last month p 3, q 1; this month p 4, q 2
// The rankings' calendar is UTC here: in the last five minutes of a UTC day the sales wait
// for the next, so that "today" is still today when the pages read it (within a few minutes).
export async function sellWithMovement() {
  const now = new Date();
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  if (midnight - now.getTime() < 300e3) await new Promise((r) => setTimeout(r, midnight - now.getTime() + 2000));
  const today = new Date();
  const day = 86400e3;
  const yesterday = new Date(today.getTime() - day);
  const lastWeek = new Date(today.getTime() - 7 * day);
  const lastMonth = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), 1) - day / 2);
  const sales = [
    ['moves', yesterday, { a: 5, b: 4, c: 3, d: 2, f: 1 }],
    ['moves', today, { c: 9, b: 8, d: 7, a: 6, e: 5, f: 4 }],
    ['moves-week', lastWeek, { x: 2, y: 1 }],
    ['moves-week', today, { y: 5, x: 3 }],
    ['moves-month', lastMonth, { p: 3, q: 1 }],
    ['moves-month', today, { p: 4, q: 2 }],
  ];
  await sellMoves(sales);
  const up = (by) => ({ kind: 'up', by });
  const down = (by) => ({ kind: 'down', by });
  const same = { kind: 'same' };
  const boards = {
    daily: { genre: 'moves', rows: [['mv-c', 1, up(2)], ['mv-b', 2, same], ['mv-d', 3, up(1)], ['mv-a', 4, down(3)], ['mv-e', 5, { kind: 'new' }], ['mv-f', 6, down(1)]] },
    weekly: { genre: 'moves-week', rows: [['mv-y', 1, up(1)], ['mv-x', 2, down(1)]] },
    monthly: { genre: 'moves-month', rows: [['mv-p', 1, same], ['mv-q', 2, same]] },
  };
  for (const [period, { genre, rows }] of Object.entries(boards)) {
    await boardReads(`/rankings/${period}?genre=${genre}`, rows);
  }
  return boards;
}

// Each row of the rankings page's board as a buyer and a screen reader meet it: the concert,
// the rank cell's visible text, the movement's mark and whether screen readers skip it, the
// words they read, and the cell as the accessibility tree has it (Chromium's own).
export async function boardRows(page) {
  const rows = await page.$$eval('#rows tr', (trs) => trs.map((tr) => {
    const cell = tr.cells[0];
    const mark = cell.querySelector('.move');
    const words = cell.querySelector('.sr');
    return {
      concert: tr.cells[1]?.textContent,
      rank: cell.firstChild?.textContent,
      mark: mark ? mark.textContent : null,
      markHidden: mark ? mark.getAttribute('aria-hidden') === 'true' : null,
      markColor: mark ? getComputedStyle(mark).color : null,
      words: words ? words.textContent : null,
      wordsUnseen: words ? words.getBoundingClientRect().width <= 1 : null,
    };
  }));
  for (const [i, row] of rows.entries()) {
    row.spoken = await page.locator(`#rows tr:nth-child(${i + 1}) td:first-child`).ariaSnapshot();
  }
  return rows;
}

// A concert's page on the booking site: its own origin (a server of this script's, on
// another port), under a CSP of its own that lets in lineup's script and reads and nothing
// else, not even a style. `page(path)` gives each path's HTML. Returns its address and
// close().
export async function bookingSite(page) {
  const server = createServer((req, res) => {
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': `default-src 'none'; script-src ${BASE}; connect-src ${BASE}; base-uri 'none'`,
    });
    res.end(page(req.url));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

// The harness's input closed, so that the script can end (in a finally).
export function endHarness() {
  answers.close();
}

// The verdict at the end of a script: no CSP violation or script error, and no serious or
// critical axe violation.
export function done() {
  assert.deepEqual(cspErrors, [], 'no CSP violation or script error');
  assert.deepEqual(violations, [], 'no serious or critical axe violation');
}
