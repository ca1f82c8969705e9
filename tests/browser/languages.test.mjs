// Both pages in every language, in Debian's Chromium: each state pages.test.mjs reaches,
// reached here once per language by a buyer whose browser speaks it (the context's locale and
// time zone), with axe-core, no raw key or {placeholder} on screen, and a screenshot
// <state>-<lang>.png in SCREENSHOTS. Each page must show its buyer's language (<html lang>
// and the string the table has for the state), format numbers, dates and times in the buyer's
// locale and zone, and fetch only that language's string table. Then the language menu, the
// choice kept across pages, and how browser tags map to languages. Started by
// tests/lineup/browser.rs, like pages.test.mjs.
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import {
  BASE, chromium, CHROMIUM, harness, api, check, dropped, open, join, state, text, opensIn, endHarness, done,
  sellWithMovement, liveMovement, boardRows, bookingSite,
} from './common.mjs';

// Each language, as a buyer's browser that speaks it: its locale and a time zone of its market.
const BUYERS = {
  en: { locale: 'en-US', timezoneId: 'America/Los_Angeles' },
  ko: { locale: 'ko-KR', timezoneId: 'Asia/Seoul' },
  ja: { locale: 'ja-JP', timezoneId: 'Asia/Tokyo' },
  'zh-Hans': { locale: 'zh-CN', timezoneId: 'Asia/Shanghai' },
  'zh-Hant': { locale: 'zh-TW', timezoneId: 'Asia/Taipei' },
};
const LANGS = Object.keys(BUYERS);
// The tables as written, to know what each state must say.
const T = Object.fromEntries(LANGS.map((l) => [l,
  JSON.parse(readFileSync(new URL(`../../shared/src/pages/i18n/${l}.json`, import.meta.url), 'utf8'))]));

// `key` in `lang` with its placeholders filled; a RegExp where a placeholder is given one.
function says(lang, key, vars = {}) {
  const s = T[lang][key];
  assert.ok(s, `${lang} has ${key}`);
  if (!Object.values(vars).some((v) => v instanceof RegExp)) {
    return Object.entries(vars).reduce((out, [n, v]) => out.split(`{${n}}`).join(String(v)), s);
  }
  let source = s.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
  for (const [n, v] of Object.entries(vars)) source = source.split(`{${n}}`).join(v instanceof RegExp ? v.source : String(v));
  return new RegExp(`^${source}$`);
}

async function expectText(page, selector, expected) {
  const shown = (await text(page, selector)).trim();
  if (expected instanceof RegExp) assert.match(shown, expected, selector);
  else assert.equal(shown, expected, selector);
}

// A buyer whose browser speaks `lang`: a context in its locale and zone. `tables` lists the
// string tables the page fetched.
async function buyer(browser, lang, options = {}) {
  const b = await open(browser, { ...BUYERS[lang], ...options });
  b.tables = [];
  b.page.on('request', (r) => {
    const m = /\/i18n\/([^/?#]+)$/.exec(new URL(r.url()).pathname);
    if (m) b.tables.push(decodeURIComponent(m[1]));
  });
  return b;
}

// The page shows `lang`: <html lang>, its title, and only that language's table fetched.
async function inLanguage(b, lang, title) {
  await b.page.waitForFunction((l) => document.documentElement.lang === l, lang, { timeout: 20000 });
  assert.equal(await b.page.title(), T[lang][title]);
  assert.ok(b.tables.length > 0 && b.tables.every((l) => l === lang), `${lang}: fetched ${b.tables}`);
}

// A row's movement as the page in `lang` must show it on the `period` board: the mark beside
// the rank and the words screen readers read instead, from the table.
function move(lang, period, m, since = T[lang][`rank.since.${period}`]) {
  if (m.kind === 'new') return [T[lang]['rank.move.new.mark'], T[lang]['rank.move.new']];
  if (m.kind === 'same') return ['–', says(lang, 'rank.move.same', { since })];
  const key = `rank.move.${m.kind}${m.by === 1 ? '.one' : ''}`;
  return [(m.kind === 'up' ? '▲' : '▼') + m.by, says(lang, key, { n: m.by, since })];
}
// The words for the daily board's first row (up 2 places since yesterday), as written in each
// language: the tables' own wording, held here.
const UP_TWO_SINCE_YESTERDAY = {
  en: 'up 2 places since yesterday',
  ko: '어제 대비 2계단 상승',
  ja: '前日から2ランクアップ',
  'zh-Hans': '较昨日上升2位',
  'zh-Hant': '較昨日上升2名',
};

const each = (fn) => Promise.all(LANGS.map(fn));
const id = (name, lang) => `${name}-${lang.toLowerCase()}`;
const poke = (page) => page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
try {
  // The rankings page with an empty board: nothing has sold yet.
  await each(async (lang) => {
    const r = await buyer(browser, lang);
    await r.page.goto(`${BASE}/rankings?period=all-time`);
    await r.page.waitForSelector('#empty:not([hidden])', { timeout: 20000 });
    await inLanguage(r, lang, 'rank.title');
    await expectText(r.page, 'h1', T[lang]['rank.title']);
    await expectText(r.page, '#empty', T[lang]['rank.empty']);
    await expectText(r.page, '#tab-all-time', T[lang]['rank.all-time']);
    await check(r.page, `rankings-empty-${lang}`);
    await r.context.close();
  });

  // Join, admitted (capacity 1), waiting behind, left. The waiting buyer is at 320 px in the
  // dark scheme, without sideways scroll.
  const waiters = {};
  await each(async (lang) => {
    const queue = id('duo', lang);
    const back = `${BASE}/queues/${queue}/`;
    const set = await api('PUT', `/queues/${queue}/settings`, { capacity: 1, sessionSeconds: 600, page: { returnUrls: [back] } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const url = `${BASE}/queues/${queue}/wait?return=${encodeURIComponent(back + 'admission')}`;
    const a = await buyer(browser, lang);
    await a.page.goto(url);
    await state(a.page, 'join');
    await inLanguage(a, lang, 'wait.title');
    await expectText(a.page, 'label[for=user]', T[lang]['wait.join.label']);
    await check(a.page, `join-${lang}`);
    await join(a.page, 'ann');
    await state(a.page, 'active');
    await expectText(a.page, '#headline', T[lang]['wait.active']);
    await expectText(a.page, '#time-left', says(lang, 'wait.active.left', { t: /\d+:\d\d/ }));
    await expectText(a.page, '#go', T[lang]['wait.active.go']);
    await check(a.page, `active-${lang}`);

    const b = await buyer(browser, lang, { viewport: { width: 320, height: 640 }, colorScheme: 'dark' });
    await b.page.goto(url);
    await join(b.page, 'ben');
    await state(b.page, 'waiting');
    await inLanguage(b, lang, 'wait.title');
    await expectText(b.page, '#headline', T[lang]['wait.waiting']);
    await expectText(b.page, '#position', '1');
    await expectText(b.page, '#ahead', T[lang]['wait.ahead.none']);
    // At position 1 of capacity 1 the turn is near: the announcement may say so first.
    const near = T[lang]['wait.near'].replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    await expectText(b.page, '#live', new RegExp(`^(${near} )?${says(lang, 'wait.announce', { n: /1/ }).source.slice(1)}`));
    // The wait in words, with its most when the range says more.
    const estimate = (await text(b.page, '#estimate')).trim();
    const words = ['wait.estimate.soon', 'wait.estimate.one', 'wait.estimate']
      .flatMap((k) => [k, k + '.range'])
      .map((k) => says(lang, k, { n: /\d+/, m: /\d+/ }));
    assert.ok(words.some((w) => w.test(estimate)), `${lang}: ${estimate}`);
    assert.ok(await b.page.evaluate(() => document.documentElement.scrollWidth <= 320), `${lang}: no sideways scroll at 320 px`);
    await check(b.page, `waiting-${lang}`);

    await a.page.click('#leave');
    await state(a.page, 'over');
    await expectText(a.page, '#headline', T[lang]['wait.left']);
    await expectText(a.page, '#rejoin', T[lang]['wait.rejoin']);
    await check(a.page, `left-${lang}`);
    await a.context.close();
    waiters[lang] = b;
  });

  // The door's check, in every language: held until it is checked, then solved and joined.
  await each(async (lang) => {
    const queue = id('door', lang);
    const set = await api('PUT', `/queues/${queue}/settings`, { capacity: 1, challenge: 'on', challengeCostMin: 1000 });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const b = await buyer(browser, lang);
    let release;
    const held = new Promise((r) => { release = r; });
    await b.page.route('**/wait/altcha.js', async (route) => { await held; await route.continue(); });
    await b.page.goto(`${BASE}/queues/${queue}/wait`);
    await join(b.page, 'dora');
    await state(b.page, 'checking');
    await inLanguage(b, lang, 'wait.title');
    await expectText(b.page, '#headline', T[lang]['wait.checking']);
    await expectText(b.page, '#checking-note', T[lang]['wait.checking.note']);
    await check(b.page, `checking-${lang}`);
    release();
    await state(b.page, 'active');
    await b.context.close();
  });

  // Redis out of reach: the waiting room says it is retrying, and the rankings page that it
  // could not refresh.
  await harness('redis stop');
  const boards = {};
  await each(async (lang) => {
    const b = waiters[lang];
    await poke(b.page);
    await b.page.waitForSelector('#notice:not([hidden])', { timeout: 20000 });
    await expectText(b.page, '#notice', says(lang, 'wait.retrying', { n: /\d+/ }));
    await check(b.page, `retrying-${lang}`);
    const r = await buyer(browser, lang);
    await r.page.goto(`${BASE}/rankings?period=daily`);
    await r.page.waitForSelector('#notice:not([hidden])', { timeout: 20000 });
    await inLanguage(r, lang, 'rank.title');
    await expectText(r.page, '#notice', T[lang]['rank.error']);
    await check(r.page, `rankings-error-${lang}`);
    boards[lang] = r;
  });
  await harness('redis start');
  await each(async (lang) => {
    await waiters[lang].page.waitForFunction(() => document.getElementById('notice').hidden, null, { timeout: 60000 });
    await boards[lang].page.waitForFunction(() => document.getElementById('notice').hidden, null, { timeout: 60000 });
    await boards[lang].context.close();
    await waiters[lang].context.close();
  });

  // Before the pre-queue opens; then the pre-queue's countdown and the opening's date and time
  // in the buyer's locale and zone; then, once the steps below have run while the opening
  // comes, the draw, checked by the page.
  const drawing = {};
  await each(async (lang) => {
    const early = id('early', lang);
    assert.equal((await api('PUT', `/queues/${early}/settings`, {
      opensAt: new Date(Date.now() + 7200e3).toISOString(),
      prequeueOpensAt: new Date(Date.now() + 3600e3).toISOString(),
    })).status, 200);
    const n = await buyer(browser, lang);
    await n.page.goto(`${BASE}/queues/${early}/wait`);
    await join(n.page, 'noa');
    await state(n.page, 'over');
    await expectText(n.page, '#headline', T[lang]['wait.notopen']);
    await check(n.page, `not-open-${lang}`);
    await n.context.close();

    const gig = id('gig', lang);
    const opens = new Date(Math.ceil((Date.now() + 25000) / 1000) * 1000);
    assert.equal((await api('PUT', `/queues/${gig}/settings`, { capacity: 1, sessionSeconds: 600, opensAt: opens.toISOString() })).status, 200);
    const y = await buyer(browser, lang);
    await y.page.goto(`${BASE}/queues/${gig}/wait`);
    await join(y.page, 'yui');
    await state(y.page, 'prequeue');
    await expectText(y.page, '#headline', T[lang]['wait.prequeue']);
    const at = await opensIn(y.page, opens, BUYERS[lang].locale, BUYERS[lang].timezoneId);
    await expectText(y.page, '#opens', says(lang, 'wait.prequeue.at', { at }));
    await expectText(y.page, '#countdown', /^0:[0-5]\d$/);
    await check(y.page, `prequeue-${lang}`);
    drawing[lang] = y;
  });
  // A token the queue does not know.
  await each(async (lang) => {
    const u = await buyer(browser, lang);
    await u.page.goto(`${BASE}/queues/${id('duo', lang)}/wait#token=AAAA`);
    await state(u.page, 'over');
    await inLanguage(u, lang, 'wait.title');
    await expectText(u.page, '#headline', T[lang]['wait.unknown']);
    await check(u.page, `unknown-${lang}`);
    await u.context.close();
  });

  // A session that ends, and a waiter dropped for absence.
  await each(async (lang) => {
    const queue = id('brief', lang);
    assert.equal((await api('PUT', `/queues/${queue}/settings`, { capacity: 1, sessionSeconds: 3, waitingIdleSeconds: 5 })).status, 200);
    const d = await buyer(browser, lang);
    await d.page.goto(`${BASE}/queues/${queue}/wait`);
    await join(d.page, 'dan');
    await state(d.page, 'active');
    await d.page.waitForFunction((s) => document.getElementById('headline')?.textContent === s, T[lang]['wait.ended'], { timeout: 20000 });
    await check(d.page, `session-ended-${lang}`);
    await d.context.close();
    assert.equal((await api('PUT', `/queues/${queue}/settings`, { sessionSeconds: 600 })).status, 200);
    assert.equal((await api('POST', `/queues/${queue}/tokens`, { userId: 'holder' })).body.status, 'active');
    const e = await buyer(browser, lang);
    await e.page.goto(`${BASE}/queues/${queue}/wait`);
    await join(e.page, 'eve');
    await state(e.page, 'waiting');
    await e.page.goto('about:blank');
    // Away from the page, the waiter stops polling, and the reaper drops it after the idle period.
    await dropped(queue);
    await e.page.goBack();
    await e.page.waitForFunction((s) => document.getElementById('headline')?.textContent === s, T[lang]['wait.dropped'], { timeout: 20000 });
    await expectText(e.page, '#message', T[lang]['wait.dropped.why']);
    await check(e.page, `dropped-${lang}`);
    await e.context.close();
  });

  // Paused with a message, then closed, then full; and sold out by the booking system.
  await each(async (lang) => {
    const queue = id('hold', lang);
    assert.equal((await api('PUT', `/queues/${queue}/settings`, { capacity: 1, sessionSeconds: 600 })).status, 200);
    assert.equal((await api('POST', `/queues/${queue}/tokens`, { userId: 'holder' })).body.status, 'active');
    const p = await buyer(browser, lang);
    await p.page.goto(`${BASE}/queues/${queue}/wait`);
    await join(p.page, 'pia');
    await state(p.page, 'waiting');
    const paused = 'Admissions resume at 19:05.';
    assert.equal((await api('PUT', `/queues/${queue}/settings`, { paused: true, message: paused })).status, 200);
    await poke(p.page);
    await p.page.waitForFunction((m) => document.getElementById('message')?.textContent === m, paused, { timeout: 20000 });
    await expectText(p.page, '#paused', T[lang]['wait.paused']);
    await expectText(p.page, '#estimate', T[lang]['wait.estimate.unknown']);
    await check(p.page, `paused-${lang}`);

    const closed = 'Sales for this date have ended.';
    assert.equal((await api('PUT', `/queues/${queue}/settings`, { paused: false, mode: 'closed', message: closed })).status, 200);
    const q = await buyer(browser, lang);
    await q.page.goto(`${BASE}/queues/${queue}/wait`);
    await join(q.page, 'quy');
    await state(q.page, 'over');
    await expectText(q.page, '#headline', T[lang]['wait.closed']);
    await expectText(q.page, '#message', closed);
    await check(q.page, `closed-${lang}`);
    await q.context.close();

    const full = 'The line is long: try the 21:00 show.';
    assert.equal((await api('PUT', `/queues/${queue}/settings`, { mode: null, maxWaiting: 1, message: full })).status, 200);
    const f = await buyer(browser, lang);
    await f.page.goto(`${BASE}/queues/${queue}/wait`);
    await join(f.page, 'fay');
    await state(f.page, 'over');
    await expectText(f.page, '#headline', T[lang]['wait.full']);
    await expectText(f.page, '#message', full);
    await expectText(f.page, '#rejoin', T[lang]['wait.tryagain']);
    await check(f.page, `full-${lang}`);
    await f.context.close();

    const soldOut = JSON.parse(readFileSync(new URL('../../events/event-applier.inventory-sold-out.json', import.meta.url)));
    soldOut.detail = { queueId: queue, message: 'Every ticket is sold.' };
    assert.equal((await api('POST', '/events', soldOut)).status, 200);
    await poke(p.page);
    await p.page.waitForFunction((s) => document.getElementById('headline')?.textContent === s, T[lang]['wait.soldout'], { timeout: 60000 });
    await expectText(p.page, '#message', 'Every ticket is sold.');
    await check(p.page, `sold-out-${lang}`);
    await p.context.close();
  });

  await each(async (lang) => {
    const y = drawing[lang];
    await y.page.waitForSelector('#draw-value', { timeout: 60000 });
    await state(y.page, 'active', 30000);
    await y.page.focus('#verify summary');
    await y.page.keyboard.press('Enter');
    await y.page.waitForSelector('#draw-check', { timeout: 20000 });
    await expectText(y.page, '#verify summary', T[lang]['wait.draw.verify']);
    await expectText(y.page, '#draw-check', T[lang]['wait.draw.ok']);
    await check(y.page, `drawn-${lang}`);
    await y.context.close();
  });

  // The rankings page with a sale: numbers and the time of the update in the buyer's locale.
  const concert = JSON.parse(readFileSync(new URL('../../events/event-applier.concert-scheduled.json', import.meta.url)));
  assert.equal((await api('POST', '/events', concert)).status, 200);
  const sale = JSON.parse(readFileSync(new URL('../../events/event-applier.payment-completed.json', import.meta.url)));
  sale.detail = { ...sale.detail, paymentId: 'pay-languages', seats: 12345, completedAt: new Date().toISOString() };
  assert.equal((await api('POST', '/events', sale)).status, 200);
  const top = (await api('GET', '/rankings/all-time?limit=10')).body.items[0];
  assert.equal(top.score, 12345);
  await each(async (lang) => {
    const r = await buyer(browser, lang, { viewport: { width: 320, height: 640 } });
    await r.page.goto(`${BASE}/rankings?period=all-time`);
    await r.page.waitForSelector('#rows tr td.num', { timeout: 20000 });
    await inLanguage(r, lang, 'rank.title');
    const { locale } = BUYERS[lang];
    const [seats, rate] = await r.page.evaluate(([score, rate, locale]) => [
      new Intl.NumberFormat(locale).format(score),
      new Intl.NumberFormat(locale, { style: 'percent', maximumFractionDigits: 1 }).format(rate),
    ], [top.score, top.rate, locale]);
    await expectText(r.page, '#rows tr td:nth-child(3)', seats);
    await expectText(r.page, '#rows tr td:nth-child(4)', rate);
    await expectText(r.page, 'th:nth-child(3)', T[lang]['rank.seats']);
    await expectText(r.page, '#tab-trending', T[lang]['rank.trending']);
    await r.page.waitForFunction(() => document.getElementById('updated').textContent !== '');
    await expectText(r.page, '#updated', says(lang, 'rank.updated', { t: /.*\d\d.*/ }));
    assert.ok(await r.page.evaluate(() => document.documentElement.scrollWidth <= 320), `${lang}: no sideways scroll at 320 px`);
    await check(r.page, `rankings-${lang}`);
    await r.context.close();
  });

  // Movement on the daily, weekly and monthly boards in each language (yesterday's sales
  // against today's, and so on): beside each rank its mark, which screen readers skip, and
  // the words they read instead, by the period. The daily board at 320 px in the dark scheme
  // too. Then the rank badge on a concert's page of the booking site in that language.
  const moving = await sellWithMovement();
  const site = await bookingSite((path) => {
    const lang = decodeURIComponent(path.split('/').pop());
    return `<!doctype html>
<html lang="${lang}"><head><meta charset="utf-8"><title>IU</title></head>
<body><main><h1>IU</h1>
<p id="c"><span data-lineup-rank="mv-c" hidden></span></p>
<p id="a"><span data-lineup-rank="mv-a" hidden></span></p>
<p id="e"><span data-lineup-rank="mv-e" hidden></span></p>
<script src="${BASE}/rankings/assets/badge.js" data-genre="moves" defer></script>
</main></body></html>`;
  });
  try {
    await each(async (lang) => {
      const views = [
        ['daily', {}], ['weekly', {}], ['monthly', {}],
        ['daily', { colorScheme: 'dark', viewport: { width: 320, height: 640 } }],
      ];
      for (const [period, options] of views) {
        const { genre, rows } = moving[period];
        const dark = options.colorScheme === 'dark';
        const r = await buyer(browser, lang, options);
        await r.page.goto(`${BASE}/rankings?period=${period}&genre=${genre}`);
        await r.page.waitForFunction((n) => document.querySelectorAll('#rows tr .move').length === n, rows.length, { timeout: 20000 });
        await inLanguage(r, lang, 'rank.title');
        const shown = await boardRows(r.page);
        assert.deepEqual(shown.map((row) => [row.concert, row.rank, row.mark, row.words]),
          rows.map(([concert, rank, m]) => [concert, String(rank), ...move(lang, period, m)]), `${lang} ${period}`);
        for (const row of shown) {
          assert.ok(row.markHidden && row.wordsUnseen, `${lang} ${row.concert}: the mark is unseen by screen readers, the words by eyes`);
          assert.equal(row.spoken, `- cell "${row.rank} ${row.words}"`, `${lang} ${row.concert}`);
        }
        if (period === 'daily') assert.equal(shown[0].words, UP_TWO_SINCE_YESTERDAY[lang], lang);
        if (dark) assert.ok(await r.page.evaluate(() => document.documentElement.scrollWidth <= 320), `${lang}: no sideways scroll at 320 px`);
        await check(r.page, `rankings-movement-${period}${dark ? '-dark-320' : ''}-${lang}`, { every: true });
        await r.context.close();
      }

      const b = await buyer(browser, 'en');
      await b.page.goto(`${site.url}/concerts/${lang}`);
      await b.page.waitForFunction(() => document.querySelectorAll('[data-lineup-rank]:not([hidden])').length === 3, null, { timeout: 20000 });
      const badges = await b.page.$$eval('[data-lineup-rank]', (slots) => slots.map((s) => [
        s.lang, s.firstChild.textContent, s.querySelector('[aria-hidden="true"]').textContent, s.lastElementChild.textContent,
      ]));
      const badge = (rank, m) => [lang, says(lang, 'rank.badge', { period: T[lang]['rank.daily'], n: rank }), ...move(lang, 'daily', m)];
      assert.deepEqual(badges, [badge(1, { kind: 'up', by: 2 }), badge(4, { kind: 'down', by: 3 }), badge(5, { kind: 'new' })], lang);
      assert.ok(b.tables.length > 0 && b.tables.every((l) => l === lang), `${lang}: the badge fetched ${b.tables}`);
      await check(b.page, `badge-${lang}`, { every: true });
      await b.context.close();
    });
  } finally {
    site.close();
  }

  // Movement on a live board, against the hour's snapshot: the words say since when, in the
  // buyer's own zone and locale.
  const live = await liveMovement();
  await each(async (lang) => {
    const r = await buyer(browser, lang);
    await r.page.goto(`${BASE}/rankings?period=last-24h&genre=${live.genre}`);
    await r.page.waitForFunction((n) => document.querySelectorAll('#rows tr .move').length === n, live.rows.length, { timeout: 20000 });
    await inLanguage(r, lang, 'rank.title');
    const time = await r.page.evaluate(([at, locale]) => new Intl.DateTimeFormat(locale, { hour: 'numeric', minute: '2-digit' })
      .format(new Date(at)), [live.at, BUYERS[lang].locale]);
    const since = says(lang, 'rank.since.snapshot', { time });
    const shown = await boardRows(r.page);
    assert.deepEqual(shown.map((row) => [row.concert, row.rank, row.mark, row.words]),
      live.rows.map(([concert, rank, m]) => [concert, String(rank), ...move(lang, 'last-24h', m, since)]), `${lang} last-24h`);
    for (const row of shown) assert.equal(row.spoken, `- cell "${row.rank} ${row.words}"`, `${lang} ${row.concert}`);
    await check(r.page, `rankings-movement-last-24h-${lang}`, { every: true });
    await r.context.close();
  });

  // The menu: an English browser picks each language in turn; each loads its own table only.
  // The choice holds on the other page, and ?lang= takes a browser tag.
  const m = await buyer(browser, 'en');
  await m.page.goto(`${BASE}/rankings`);
  await inLanguage(m, 'en', 'rank.title');
  const offered = await m.page.$$eval('#lang option', (os) => os.map((o) => [o.value, o.lang, o.textContent]));
  assert.deepEqual(offered, LANGS.map((l) => [l, l, T[l]['lang.name']]));
  for (const lang of [...LANGS.slice(1), 'en']) {
    m.tables.length = 0;
    await m.page.selectOption('#lang', lang);
    await m.page.waitForFunction((l) => document.documentElement.lang === l, lang);
    await expectText(m.page, 'h1', T[lang]['rank.title']);
    assert.deepEqual(m.tables, lang === 'en' ? [] : [lang], `${lang}: only its table, once`);
  }
  await m.page.selectOption('#lang', 'zh-Hant');
  await m.page.waitForFunction(() => document.documentElement.lang === 'zh-Hant');
  await m.page.goto(`${BASE}/queues/${id('menu', 'en')}/wait`);
  await state(m.page, 'join');
  assert.equal(await m.page.evaluate(() => document.documentElement.lang), 'zh-Hant');
  await expectText(m.page, 'label[for=user]', T['zh-Hant']['wait.join.label']);
  await m.context.close();
  const q = await buyer(browser, 'en');
  await q.page.goto(`${BASE}/rankings?lang=zh-SG`);
  await inLanguage(q, 'zh-Hans', 'rank.title');

  // Browser tags to languages, by the pages' own code; and a Hong Kong browser's page.
  const tags = {
    'zh-TW': 'zh-Hant', 'zh-HK': 'zh-Hant', 'zh-MO': 'zh-Hant', 'zh-Hant': 'zh-Hant', 'zh-Hant-CN': 'zh-Hant',
    'zh-hant-tw': 'zh-Hant', zh: 'zh-Hans', 'zh-CN': 'zh-Hans', 'zh-SG': 'zh-Hans', 'zh-Hans': 'zh-Hans',
    'zh-Hans-HK': 'zh-Hans', ja: 'ja', 'ja-JP': 'ja', ko: 'ko', 'ko-KR': 'ko', en: 'en', 'en-GB': 'en', 'fr-FR': null, '': null,
  };
  for (const [tag, lang] of Object.entries(tags)) {
    assert.equal(await q.page.evaluate((t) => window.LINEUP_I18N.match(t), tag), lang, tag);
  }
  await q.context.close();
  const hk = await open(browser, { locale: 'zh-HK' });
  await hk.page.goto(`${BASE}/rankings`);
  await hk.page.waitForFunction(() => document.documentElement.lang === 'zh-Hant', null, { timeout: 20000 });
  await hk.context.close();
} finally {
  await browser.close();
  endHarness();
}

done();
console.log('language tests passed');
