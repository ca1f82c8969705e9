// What every browser script shares: Chromium, the harness that asks tests/lineup/browser.rs
// to stop and start Redis ("lineup:redis stop" / "lineup:redis start" on stdout, answered by
// a line on stdin), the stack's API, a browser context per buyer, and check(): axe-core, no
// raw value on screen, a screenshot. A script ends with endHarness() and done(), which
// fails on any CSP violation, script error or serious axe violation seen.
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
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
// CSP stays as served), and screenshotted.
export async function check(page, name) {
  await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const serious = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of serious) violations.push(`${name}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target).join(' ')}`);
  const shown = await page.evaluate(() => document.body.innerText);
  assert.doesNotMatch(shown, /null|undefined|NaN|\{[a-z]+\}|(wait|rank)\.[a-z]/, `${name} shows a raw value`);
  await page.screenshot({ path: `${SHOTS}/${name}.png` });
  console.log(`checked ${name}: ${serious.length} serious or critical violations`);
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
