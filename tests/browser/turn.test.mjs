// The buyer's turn with the waiting room in a background tab, in Debian's Chromium against a
// running local stack (BASE_URL). Started by tests/lineup/browser.rs. Headless Chromium shows
// every page, so this script hides one the way a browser hides a background tab, as the page
// sees it: document.visibilityState and document.hidden read "hidden", and visibilitychange
// fires (emulate() below). axe-core checks every new state; screenshots go to SCREENSHOTS.
import assert from 'node:assert/strict';
import {
  BASE, chromium, CHROMIUM, api, check, open, join, state, text, until, admission, endHarness, done,
} from './common.mjs';

// Runs in the page before its script: setHidden() sets what the page reads of its visibility
// and fires visibilitychange; tones counts the notes WebAudio starts (the browser is muted);
// said keeps each text of the live region.
function emulate() {
  let hidden = false;
  Object.defineProperty(Document.prototype, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') });
  Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => hidden });
  window.setHidden = (h) => {
    hidden = h;
    document.dispatchEvent(new Event('visibilitychange'));
  };
  window.tones = 0;
  const start = OscillatorNode.prototype.start;
  OscillatorNode.prototype.start = function (...args) {
    window.tones += 1;
    return start.apply(this, args);
  };
  window.said = [];
  new MutationObserver(() => {
    const live = document.getElementById('live');
    if (live && live.textContent && live.textContent !== window.said.at(-1)) window.said.push(live.textContent);
  }).observe(document, { subtree: true, childList: true, characterData: true });
}

async function page(browser, options = {}) {
  const opened = await open(browser, options);
  await opened.page.addInitScript(emulate);
  return opened;
}

// A queue of capacity 1 whose one session is held by `holder`: the next buyer waits at
// position 1, near the turn. Returns the holder's token.
async function heldQueue(queue, settings = {}) {
  const set = await api('PUT', `/queues/${queue}/settings`, {
    capacity: 1, sessionSeconds: 600, page: { returnUrls: [`${BASE}/queues/${queue}/`] }, ...settings,
  });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  const holder = await api('POST', `/queues/${queue}/tokens`, { userId: 'holder-' + queue });
  assert.equal(holder.body.status, 'active', JSON.stringify(holder.body));
  return holder.body.token;
}

// The notifications the page's service worker shows.
const notifications = (p) => p.evaluate(async () => {
  const all = await (await navigator.serviceWorker.getRegistration()).getNotifications();
  return all.map((n) => ({ title: n.title, body: n.body, data: n.data }));
});

const waitUrl = (queue) => `${BASE}/queues/${queue}/wait?return=${encodeURIComponent(`${BASE}/queues/${queue}/admission`)}`;
const placeOf = (p, queue) => p.evaluate((k) => JSON.parse(sessionStorage.getItem(k)).token, 'lineup:' + queue);
const isStatus = (r) => r.request().method() === 'GET' && /\/tokens\/[^/]+$/.test(new URL(r.url()).pathname);

// The wait as the page words it, from a status reply (docs/pages.md, "What it shows").
function words(b) {
  const s = b.estimatedWaitSeconds, r = b.estimatedWaitRange;
  if (b.paused || s == null) return 'Calculating';
  const n = s < 60 ? 0 : r === undefined ? Math.ceil(s / 60) : Math.round(s / 60);
  const estimate = n === 0 ? 'Less than a minute' : n === 1 ? 'About 1 minute' : `About ${n} minutes`;
  const most = r ? Math.ceil(r.high / 60) : 0;
  if (most <= Math.max(n, 1)) return estimate;
  return n === 0 ? `${estimate}, at most ${most} minutes` : `${estimate}, at most ${most}`;
}

// The turn comes while the page is hidden: the title, the chime, the notification through the
// service worker, and how long the place is held; once visible, the page hands over.
async function turnWhileHidden(browser) {
  const holder = await heldQueue('turn');
  const { context, page: p } = await page(browser, { locale: 'en-GB', timezoneId: 'Asia/Seoul' });
  await context.grantPermissions(['notifications'], { origin: BASE });
  const replies = new Set();
  p.on('response', async (r) => { if (isStatus(r) && r.ok()) replies.add(words(await r.json())); });
  await p.goto(waitUrl('turn'));
  await join(p, 'tara');
  await state(p, 'waiting');

  // Near the turn (position 1 of capacity 1): shown, and said once in the live region.
  await p.waitForSelector('#near');
  assert.equal(await text(p, '#near'), 'Your turn is near. Keep this page open.');
  await p.waitForFunction(() => window.said.some((s) => s.startsWith('Your turn is near.')));
  for (let i = 0; i < 3; i++) await p.waitForResponse(isStatus);
  // The wait in words, as the reply has it: with estimatedWaitRange, the range; without it
  // (an older server), the estimate alone.
  const shown = await text(p, '#estimate');
  assert.ok(replies.has(shown), `${shown} is one of ${[...replies]}`);
  if (![...replies].some((w) => /at most/.test(w))) console.log(`the wait reads "${shown}" (no range in these replies)`);

  // The sound, switched on (a tone at once), and the notification, asked for with the button.
  await p.check('#sound');
  await p.waitForFunction(() => window.tones > 0);
  await p.click('#notify');
  await p.waitForSelector('#notify-on');
  assert.equal(await text(p, '#notify-on'), 'You will get a notification when it\'s your turn.');
  const scope = await p.evaluate(async () => (await navigator.serviceWorker.getRegistration()).scope);
  assert.equal(scope, `${BASE}/queues/turn/wait`, 'the worker\'s scope is the page');
  assert.ok(await p.isChecked('#sound'), 'the sound stays on across polls');
  await check(p, 'turn-near');
  // Said once: more polls do not say it again, nor does a reload (the place remembers).
  await p.reload();
  await state(p, 'waiting');
  for (let i = 0; i < 2; i++) await p.waitForResponse(isStatus);
  assert.equal((await p.evaluate(() => window.said)).filter((s) => s.startsWith('Your turn is near.')).length, 0);
  assert.ok(await p.$('#notify-on'), 'the notification stays asked for');
  await p.check('#sound');

  // The tab goes to the background, the holder leaves, and the turn comes.
  await p.evaluate(() => window.setHidden(true));
  const tones = await p.evaluate(() => window.tones);
  assert.equal((await api('DELETE', `/queues/turn/tokens/${holder}`)).status, 204);
  await state(p, 'active', 30000);
  const status = await api('GET', `/queues/turn/tokens/${await placeOf(p, 'turn')}`);
  assert.equal(status.body.status, 'active');
  const at = await p.evaluate((ms) => new Intl.DateTimeFormat('en-GB', {
    hour: 'numeric', minute: '2-digit', timeZone: 'Asia/Seoul',
  }).format(ms), Date.parse(status.body.activeUntil));
  assert.equal(await p.title(), `\u25cf It's your turn \u2014 until ${at}`);
  assert.equal(await text(p, '#held'), `Your place is held until ${at}.`);
  await p.waitForFunction((n) => window.tones > n, tones);
  const notes = await until(async () => {
    const all = await notifications(p);
    return all.length && all;
  }, 'the notification');
  assert.equal(notes.length, 1);
  assert.equal(notes[0].title, 'It\'s your turn');
  assert.equal(notes[0].body, `Your place is held until ${at}.`);
  assert.ok(notes[0].data.startsWith(waitUrl('turn') + '#token='), notes[0].data);
  await check(p, 'turn-hidden');

  // Back to the tab: the mark and the notification go, and the page hands over.
  await p.evaluate(() => window.setHidden(false));
  await p.waitForFunction(() => document.title.startsWith('It\'s your turn'));
  await until(async () => (await notifications(p)).length === 0, 'the notification to close');
  assert.equal(await p.evaluate(() => document.activeElement?.id), 'go', 'focus is on the way to booking');
  await p.click('#go');
  await p.waitForURL(/\/queues\/turn\/admission#queueToken=/);
  const admitted = await admission(p, 'turn');
  assert.equal(admitted.status, 200, JSON.stringify(admitted.body));
  assert.equal(admitted.body.userId, 'tara');
  await context.close();
}

// The buttons in Korean, at 320 px in the dark scheme; and a browser that refuses
// notifications (headless Chromium denies the request): the page says they are blocked.
async function alertsInKorean(browser) {
  await heldQueue('turn-ko');
  const { context, page: p } = await page(browser, { locale: 'ko-KR', viewport: { width: 320, height: 640 }, colorScheme: 'dark' });
  await p.goto(waitUrl('turn-ko'));
  await join(p, 'jiho');
  await state(p, 'waiting');
  await p.waitForSelector('#near');
  assert.equal(await text(p, '#near'), '곧 입장 차례입니다. 이 페이지를 열어 두세요.');
  assert.equal(await text(p, '#notify'), '차례가 되면 알림 받기');
  assert.match(await text(p, '.check'), /차례가 되면 소리로 알림/);
  assert.ok(await p.evaluate(() => document.documentElement.scrollWidth <= 320), 'no sideways scroll at 320 px');
  await check(p, 'turn-near-ko-dark-320');
  await p.click('#notify');
  await p.waitForSelector('#notify-off', { timeout: 20000 });
  assert.equal(await text(p, '#notify-off'), '브라우저 설정에서 이 사이트의 알림이 차단되어 있습니다.');
  assert.equal(await p.$('#notify'), null);
  await check(p, 'turn-blocked-ko');
  await context.close();
}

// A hidden page polls the moment it is visible again, and a throttled one keeps its place.
// The page's clock is Playwright's: paused, no timer of the page runs but when this script
// lets it, as a browser that throttles a background tab lets its timers run only now and then.
async function background(browser) {
  await heldQueue('back');
  const { context, page: p } = await page(browser);
  await p.clock.install();
  await p.goto(waitUrl('back'));
  await join(p, 'vera');
  await state(p, 'waiting');
  // Paused (the jump may run a due poll: let it end).
  await p.clock.pauseAt(Date.now() + 1000);
  await new Promise((r) => setTimeout(r, 1000));
  let polls = 0;
  p.on('request', (r) => { if (r.method() === 'GET' && /\/tokens\/[^/]+$/.test(new URL(r.url()).pathname)) polls += 1; });
  await p.evaluate(() => window.setHidden(true));
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal(polls, 0, 'no timer runs, and hiding does not poll');
  const shows = p.waitForResponse(isStatus, { timeout: 5000 });
  await p.evaluate(() => window.setHidden(false));
  assert.equal((await shows).status(), 200, 'the page polls as soon as it is visible');

  // Hidden again, its timers run only at wake-ups: each lets the due poll run, once. This
  // server's idle period is 15 s, so wake-ups 7.5 s apart are a tab throttled to once a
  // minute against the default 120 s, scaled down. Over 30 s, twice the idle period, the
  // place holds: each wake-up polls, as the server told it.
  await p.evaluate(() => window.setHidden(true));
  for (let i = 0; i < 4; i++) {
    await new Promise((r) => setTimeout(r, 7500));
    const before = polls;
    const polled = p.waitForResponse(isStatus, { timeout: 5000 });
    await p.clock.fastForward(7500);
    assert.equal((await polled).status(), 200);
    assert.equal(polls, before + 1, 'one poll per wake-up');
  }
  const still = await api('GET', `/queues/back/tokens/${await placeOf(p, 'back')}`);
  assert.equal(still.status, 200, JSON.stringify(still.body));
  assert.equal(still.body.status, 'waiting');
  await context.close();
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
try {
  await turnWhileHidden(browser);
  await alertsInKorean(browser);
  await background(browser);
} finally {
  await browser.close();
  endHarness();
}
done();
console.log('turn tests passed');
