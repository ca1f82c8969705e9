// The waiting-room page. LINEUP_LANGUAGES and i18n.js are prepended by the server; the
// chosen language's string table is loaded before the first render.
(() => {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const root = $('lineup');
  const queue = root.dataset.queue;
  // The return URL, as the server checked it against the queue's allow-list. A page served
  // while Redis was out of reach has none; it asks for itself again once Redis answers.
  let returnUrl = root.dataset.return || '';
  let returnUnchecked = root.dataset.returnCheck === 'pending';
  let checking = false;
  const localJoin = root.dataset.localJoin === '1';
  const KEY = 'lineup:' + queue;
  const MAX_BACKOFF = 60;

  const store = {
    get(area, key) { try { return JSON.parse(window[area].getItem(key)); } catch (e) { return null; } },
    set(area, key, value) { try { window[area].setItem(key, JSON.stringify(value)); } catch (e) { /* private mode */ } },
    drop(area, key) { try { window[area].removeItem(key); } catch (e) { /* private mode */ } },
  };

  const I18N = window.LINEUP_I18N;
  let lang = I18N.pick();
  const t = (k, vars) => I18N.text(lang, k, vars);
  let ready = false;

  // The buyer's place: the token from the fragment (never the query string), kept in
  // sessionStorage so a reload resumes and never re-queues.
  let place = store.get('sessionStorage', KEY);
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get('token')) {
    const token = fragment.get('token');
    if (!place || place.token !== token) place = { token };
    if (fragment.get('access_token')) place.bearer = fragment.get('access_token');
    store.set('sessionStorage', KEY, place);
    history.replaceState(null, '', location.pathname + location.search);
  }

  let view = { kind: 'loading' };
  let timer = null;
  let tick = null;
  let inflight = false;
  let backoff = 0;
  let lastAnnounced = 0;
  let announced = null;
  // The summary's draw ({seedSha256, seed, members}), when it was read, and whether this
  // browser found the buyer's value to match it; and whether the buyer opened that section.
  let drawn = null;
  let verifyOpen = false;
  // The queue's capacity (undefined until read); the AudioContext the sound toggle made (its
  // click lets it play), null while off; whether the turn came unseen, in a hidden page.
  let capacity;
  let audio = null;
  let unseen = false;

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c) e.append(c);
    return e;
  }

  function headers() {
    const h = { accept: 'application/json' };
    if (place && place.bearer) h.authorization = 'Bearer ' + place.bearer;
    return h;
  }

  // The wait in words: "About 4 minutes, at most 7": the estimate rounded, the most rounded
  // up and left out when it is no more. "Calculating" only without an estimate (paused,
  // before the opening). A server without estimatedWaitRange (an earlier version, met while
  // a deploy rolls out) gets the estimate in whole minutes, rounded up.
  function waitText(v) {
    const s = v.estimate, r = v.range;
    if (v.paused || s == null) return t('wait.estimate.unknown');
    const n = s < 60 ? 0 : r === undefined ? Math.ceil(s / 60) : Math.round(s / 60);
    const m = r ? Math.ceil(r.high / 60) : 0;
    const key = ['wait.estimate.soon', 'wait.estimate.one'][n] || 'wait.estimate';
    return t(m > Math.max(n, 1) ? key + '.range' : key, { n: num(n), m: num(m) });
  }

  // Near the turn: a place within the queue's capacity, or under a minute to wait.
  const near = (v) => !v.paused && ((capacity && v.position != null && v.position <= capacity) || (v.estimate != null && v.estimate < 60));

  // "12:41" (or "12:41 PM") in the buyer's locale and time zone.
  const hhmm = (ms) => new Intl.DateTimeFormat(locale(), { hour: 'numeric', minute: '2-digit' }).format(ms);
  const held = (v) => (Number.isFinite(v.until) ? t('wait.active.held', { at: hhmm(v.until) }) : '');

  function clock(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    const two = (x) => String(x).padStart(2, '0');
    return (h ? h + ':' + two(m) : m) + ':' + two(r);
  }

  // The buyer's locale in the page's language: en-GB stays en-GB, not en.
  const locale = () => I18N.locale(lang);
  const num = (n) => new Intl.NumberFormat(locale()).format(n);

  // Time to the opening: "2 days 3:04:05" (days in the buyer's words), else h:mm:ss.
  function countdown(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    const d = Math.floor(s / 86400);
    const rest = clock((s % 86400) * 1000);
    return d ? new Intl.NumberFormat(locale(), { style: 'unit', unit: 'day', unitDisplay: 'long' }).format(d) + ' ' + rest : rest;
  }

  const hex = (bytes) => Array.from(new Uint8Array(bytes), (x) => x.toString(16).padStart(2, '0')).join('');

  // The draw's recipe (docs/draw.md), run here once the seed is out: the seed's SHA-256 is
  // the commitment, and the buyer's value is the first 7 hex digits (28 bits) of
  // HMAC-SHA256(seed bytes, user id). null: nothing to check, or no WebCrypto (plain http).
  async function verify(d, value, user) {
    const c = window.crypto && window.crypto.subtle;
    if (!c || !/^[0-9a-f]{64}$/.test(d.seed || '') || !value || !user) return null;
    const seed = new Uint8Array(d.seed.match(/../g).map((x) => parseInt(x, 16)));
    const key = await c.importKey('raw', seed, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const mac = hex(await c.sign('HMAC', key, new TextEncoder().encode(user)));
    return hex(await c.digest('SHA-256', seed)) === d.seedSha256 && mac.slice(0, 7) === value;
  }

  // Reads the queue's summary (public, cached for seconds): its capacity once, and the draw
  // once the seed is out, or at most every 30 s before.
  async function readSummary(v) {
    const draw = v.draw && !(drawn && (drawn.seed || Date.now() - drawn.at < 30000));
    if (capacity !== undefined && !draw) return;
    try {
      const r = await fetch('../' + encodeURIComponent(queue), { headers: { accept: 'application/json' } });
      const b = r.ok ? await r.json() : null;
      if (b && capacity === undefined) {
        capacity = (b.settings && b.settings.capacity) || 0;
        if (view.kind === 'waiting') render();
      }
      const d = b && draw ? b.draw : null;
      if (!d || !d.seedSha256) return;
      drawn = { seedSha256: d.seedSha256, seed: d.seed, members: d.members, at: Date.now() };
      drawn.check = await verify(drawn, v.draw, v.user);
      if (view.draw) render();
    } catch (e) { /* the next poll tries again */ }
  }

  // The buyer's draw value, and how to check it.
  function drawSection(v) {
    const d = drawn || {};
    const row = (label, value, id) => [el('dt', { text: t(label) }), el('dd', {}, el('code', { id, text: value }))];
    return [
      el('p', {}, el('span', { class: 'muted', text: t('wait.draw.value') + t('ui.colon') }), el('code', { id: 'draw-value', text: v.draw })),
      el('details', { id: 'verify', ontoggle: (e) => { verifyOpen = e.target.open; }, ...(verifyOpen ? { open: '' } : {}) },
        el('summary', { id: 'verify-summary', text: t('wait.draw.verify') }),
        el('dl', {}, ...row('wait.draw.commit', d.seedSha256 || t('wait.draw.pending'), 'draw-commit'),
          ...row('wait.draw.seed', d.seed || t('wait.draw.pending'), 'draw-seed')),
        el('p', { text: t('wait.draw.recipe') }),
        d.members != null ? el('p', { text: t('wait.draw.members', { n: num(d.members) }) }) : null,
        d.check == null ? null : el('p', { id: 'draw-check', class: d.check ? '' : 'notice', text: t(d.check ? 'wait.draw.ok' : 'wait.draw.bad') }),
        el('p', { text: t('wait.draw.docs') })),
    ];
  }

  let pending = null;
  function announce(text, now) {
    // A polite rate: a position change is spoken at most every 20 s (the latest one, once
    // the 20 s are up); anything else at once.
    clearTimeout(pending);
    if (text === announced) return;
    const wait = now ? 0 : lastAnnounced + 20000 - Date.now();
    if (wait > 0) {
      pending = setTimeout(() => announce(text, true), wait);
      return;
    }
    announced = text;
    lastAnnounced = Date.now();
    $('live').textContent = text;
  }

  function notice(text) {
    const n = $('notice');
    n.hidden = !text;
    n.textContent = text || '';
  }

  // A way back into the line: `label` is the button's string ("Join again", "Try again").
  function rejoin(label) {
    if (localJoin) {
      return el('button', { type: 'button', id: 'rejoin', text: t(label), onclick: () => { forget(); show({ kind: 'join' }); } });
    }
    if (returnUrl) return el('a', { class: 'button', id: 'rejoin', href: returnUrl, text: t(label) });
    return el('p', { text: t('wait.rejoin.site') });
  }

  // The operator's message, when the queue has one.
  const said = (v) => (v.message ? el('p', { id: 'message', text: v.message }) : null);

  function forget() {
    place = null;
    store.drop('sessionStorage', KEY);
  }

  // A short two-note chime, made here, if the buyer switched the sound on.
  function chime() {
    if (!audio) return;
    audio.resume();
    const o = audio.createOscillator(), g = audio.createGain(), at = audio.currentTime;
    o.frequency.setValueAtTime(880, at);
    o.frequency.setValueAtTime(1320, at + 0.2);
    g.gain.setValueAtTime(0.3, at);
    g.gain.exponentialRampToValueAtTime(0.001, at + 0.5);
    o.connect(g).connect(audio.destination);
    o.start(at);
    o.stop(at + 0.5);
  }

  function toggleSound(e) {
    if (audio) audio.close();
    audio = e.target.checked ? new AudioContext() : null;
    chime();
  }

  // The notification comes through the service worker (wait/worker.js), the only way
  // Android's Chrome allows. Permission is asked for only when the buyer presses the button.
  const notifying = () => place && place.notify && Notification.permission === 'granted';
  async function askToNotify() {
    try {
      if (await Notification.requestPermission() === 'granted') {
        await navigator.serviceWorker.register('wait/worker.js', { scope: 'wait' });
        place.notify = true;
        store.set('sessionStorage', KEY, place);
      }
    } catch (e) { /* the button stays */ }
    render();
    if (notifying()) announce(t('wait.notify.on'), true);
  }

  // How the buyer hears of the turn with the page in the background.
  function alerts() {
    const out = [];
    if (window.AudioContext) {
      out.push(el('label', { class: 'check' },
        el('input', { type: 'checkbox', id: 'sound', onchange: toggleSound, ...(audio ? { checked: '' } : {}) }), t('wait.sound')));
    }
    if (!window.Notification || !navigator.serviceWorker) return out;
    if (notifying()) out.push(el('p', { id: 'notify-on', text: t('wait.notify.on') }));
    else if (Notification.permission === 'denied') out.push(el('p', { id: 'notify-off', class: 'muted', text: t('wait.notify.off') }));
    else out.push(el('button', { type: 'button', class: 'secondary', id: 'notify', text: t('wait.notify'), onclick: askToNotify }));
    return out;
  }

  // The turn came: the chime; and in a hidden page a mark in the title, and the notification.
  // A click on it brings this page back, or opens it with the place in the fragment.
  function turn(v) {
    chime();
    if (document.visibilityState !== 'hidden') return;
    unseen = true;
    if (!notifying()) return;
    const hand = new URLSearchParams({ token: place.token, ...(place.bearer && { access_token: place.bearer }) });
    navigator.serviceWorker.ready.then((r) => r.showNotification(t('wait.active'), {
      body: held(v), tag: KEY, lang, requireInteraction: true, data: location.href.split('#')[0] + '#' + hand,
    })).catch(() => {});
  }

  // Back on the page: the turn's notification has done its work.
  function seen() {
    const was = unseen;
    unseen = false;
    if (was) render();
    if (notifying()) navigator.serviceWorker.ready.then((r) => r.getNotifications({ tag: KEY }))
      .then((all) => all.forEach((n) => n.close())).catch(() => {});
  }

  // Renders `view` into the card. Every text comes from the string table.
  function render() {
    const v = view;
    // A redraw keeps keyboard focus where it was (the leave button, the join field, the
    // draw's summary): each focusable element has an id.
    const focused = $('card').contains(document.activeElement) ? document.activeElement.id : '';
    const card = $('card');
    const body = $('body');
    const head = $('headline');
    clearInterval(tick);
    tick = null;
    card.classList.remove('skeleton');
    card.removeAttribute('aria-busy');
    body.replaceChildren();
    document.documentElement.lang = lang;
    document.title = t('wait.title');
    for (const n of document.querySelectorAll('[data-t]')) n.textContent = t(n.dataset.t);
    root.dataset.state = v.kind;
    switch (v.kind) {
      case 'loading':
        card.classList.add('skeleton');
        head.textContent = t('wait.title');
        body.append(el('div', { class: 'bone' }), el('div', { class: 'bone short' }));
        break;
      case 'waiting': {
        head.textContent = t('wait.waiting');
        const placed = v.position != null;
        const ahead = placed ? v.position - 1 : null;
        const progress = placed ? Math.max(0, Math.min(1, (place.start - v.position) / place.start)) : 0;
        body.append(...[
          el('p', { class: 'muted', text: t('wait.position') }),
          el('p', { class: 'big', id: 'position', text: placed ? num(v.position) : '\u2026' }),
          placed ? el('p', { id: 'ahead', text: ahead > 0 ? t('wait.ahead', { n: num(ahead) }) : t('wait.ahead.none') }) : null,
          el('progress', { max: '100', value: String(Math.round(progress * 100)), 'aria-label': t('wait.progress') }),
          el('p', {}, el('span', { class: 'muted', text: t('wait.estimate.label') + t('ui.colon') }),
            el('strong', { id: 'estimate', text: waitText(v) })),
          v.paused ? el('p', { class: 'notice', id: 'paused', text: t('wait.paused') }) : null,
          near(v) ? el('p', { id: 'near', text: t('wait.near') }) : null,
          said(v),
          ...(v.draw ? drawSection(v) : []),
          ...alerts(),
          el('button', { type: 'button', class: 'secondary', id: 'leave', text: t('wait.leave'), onclick: leave }),
        ].filter(Boolean));
        // Near the turn is said once for the place (kept with it), not at every poll.
        const first = near(v) && !place.near;
        if (first) {
          place.near = true;
          store.set('sessionStorage', KEY, place);
        }
        if (placed) announce((first ? t('wait.near') + ' ' : '') + t('wait.announce', { n: num(v.position) }), first);
        break;
      }
      case 'active': {
        head.textContent = t('wait.active');
        if (held(v)) document.title = (unseen ? '\u25cf ' : '') + t('wait.active.tab', { at: hhmm(v.until) });
        const left = el('p', { id: 'time-left' });
        const update = () => { left.textContent = t('wait.active.left', { t: clock(v.until - Date.now()) }); };
        update();
        tick = setInterval(update, 1000);
        let go;
        if (returnUrl) {
          const target = new URL(returnUrl);
          // The handover: the queue token, and the admission JWT the booking API verifies
          // by itself (docs/booking.md), renewed by each poll.
          target.hash = new URLSearchParams({ queueToken: place.token, ...(v.admission && { admission: v.admission }) });
          go = el('a', { class: 'button', id: 'go', href: target.href, text: t('wait.active.go') });
        } else {
          go = el('p', { text: t('wait.active.noreturn') });
        }
        body.append(...[left, el('p', { id: 'held', text: held(v) }), said(v), go, ...(v.draw ? drawSection(v) : []),
          el('button', { type: 'button', class: 'secondary', id: 'leave', text: t('wait.leave'), onclick: leave })].filter(Boolean));
        announce(t('wait.active'), true);
        if (v.first && !$(focused)) go.focus();
        break;
      }
      case 'prequeue': {
        // A countdown to the opening, in the buyer's locale and time zone. Without a valid
        // opensAt (an older server), the state alone.
        head.textContent = t('wait.prequeue');
        const at = Date.parse(v.opensAt);
        if (Number.isFinite(at)) {
          const when = new Intl.DateTimeFormat(locale(), {
            weekday: 'short', year: 'numeric', month: 'short', day: 'numeric',
            hour: 'numeric', minute: '2-digit', timeZoneName: 'short',
          }).format(at);
          const left = el('p', { class: 'big', id: 'countdown', role: 'timer' });
          const update = () => {
            const ms = at - Date.now();
            left.textContent = ms > 0 ? countdown(ms) : t('wait.prequeue.now');
            // The poll after the opening is the one pollAfterSeconds set: the server spreads
            // the pre-queue's by place in the draw.
            if (ms <= 0) clearInterval(tick);
          };
          update();
          if (at > Date.now()) tick = setInterval(update, 1000);
          body.append(el('p', { id: 'opens', text: t('wait.prequeue.at', { at: when }) }), left);
          announce(t('wait.prequeue.at', { at: when }), true);
        }
        body.append(...[el('p', { text: t('wait.prequeue.joined') }), said(v), ...alerts(),
          el('button', { type: 'button', class: 'secondary', id: 'leave', text: t('wait.leave'), onclick: leave })].filter(Boolean));
        break;
      }
      case 'checking': {
        // The door's proof of work: no puzzle, a bar that fills toward the expected time and
        // slows near its end.
        head.textContent = t('wait.checking');
        const bar = el('progress', { id: 'checking', max: '100', value: '0', 'aria-label': t('wait.checking') });
        const update = () => {
          bar.value = Math.round(99 * (1 - Math.exp(-(Date.now() - v.since) / Math.max(1, v.expected))));
        };
        update();
        tick = setInterval(update, 250);
        body.append(el('p', { id: 'checking-note', text: t('wait.checking.note') }), bar);
        announce(t('wait.checking'), true);
        break;
      }
      case 'over': {
        head.textContent = t(v.title);
        if (v.why || v.detail) body.append(el('p', { id: 'message', text: v.why ? t(v.why) : v.detail }));
        if (v.rejoin) body.append(rejoin(v.rejoin));
        announce(t(v.title), true);
        break;
      }
      case 'join': {
        head.textContent = t('wait.title');
        if (!localJoin) {
          body.append(el('p', { text: t('wait.nojoin') }));
          break;
        }
        const input = el('input', { id: 'user', name: 'user', required: '', maxlength: '64', autocomplete: 'off' });
        const form = el('form', { onsubmit: (e) => { e.preventDefault(); join(input.value.trim()); } },
          el('label', { for: 'user', text: t('wait.join.label') }), input,
          el('button', { type: 'submit', text: t('wait.join') }));
        body.append(form);
        if (v.error) body.append(el('p', { class: 'notice', text: t('wait.join.error', { e: v.error }) }));
        break;
      }
    }
    if (focused && $(focused)) $(focused).focus();
  }

  function show(next) {
    // Focus moves to the booking button once, when the buyer is admitted.
    next.first = next.kind !== view.kind;
    if (next.kind === 'active' && (view.kind === 'waiting' || view.kind === 'prequeue')) turn(next);
    view = next;
    render();
    if (next.draw || next.kind === 'waiting') readSummary(next);
  }

  // The views the problem types and end statuses name: the departures, and a queue's
  // refusals (sold out, closed, full, not open yet). `why` names the string that says why;
  // `rejoin` the button that offers a way back in; `forget`: the place is gone.
  const OVER = {
    'session-ended': { title: 'wait.ended', rejoin: 'wait.rejoin', forget: true },
    'dropped-for-absence': { title: 'wait.dropped', why: 'wait.dropped.why', rejoin: 'wait.rejoin', forget: true },
    'left': { title: 'wait.left', rejoin: 'wait.rejoin', forget: true },
    'not-found': { title: 'wait.unknown', rejoin: 'wait.rejoin', forget: true },
    'sold-out': { title: 'wait.soldout' },
    'soldout': { title: 'wait.soldout' },
    'closed': { title: 'wait.closed' },
    'queue-closed': { title: 'wait.closed' },
    'full': { title: 'wait.full', rejoin: 'wait.tryagain' },
    'queue-full': { title: 'wait.full', rejoin: 'wait.tryagain' },
    'queue-not-open': { title: 'wait.notopen', rejoin: 'wait.tryagain' },
  };

  function fromStatus(b) {
    // A buyer placed by the draw: the value, and the user id it was drawn for.
    const draw = b.draw && typeof b.draw.value === 'string' ? b.draw.value : null;
    if (b.status === 'waiting') {
      // The position shown never goes up; progress is measured from where the buyer started.
      // A place no tick has counted yet has none (null): the best one known stays.
      if (typeof b.position === 'number') {
        place.best = Math.min(place.best || b.position, b.position);
        place.start = Math.max(place.start || 0, place.best);
        store.set('sessionStorage', KEY, place);
      }
      return { kind: 'waiting', position: place.best || null, estimate: b.estimatedWaitSeconds, range: b.estimatedWaitRange, paused: !!b.paused, message: b.message, draw, user: b.userId };
    }
    if (b.status === 'active') {
      const admission = typeof b.admission === 'string' ? b.admission : null;
      return { kind: 'active', until: Date.parse(b.activeUntil), message: b.message, draw, user: b.userId, admission };
    }
    if (b.status === 'prequeue') return { kind: 'prequeue', opensAt: b.opensAt, message: b.message };
    const known = OVER[b.status];
    if (known) return { kind: 'over', title: known.title, detail: b.message };
    return null;
  }

  // Reads this page again, for the return URL the server checks in it, once an answer shows
  // that Redis answers. Until a copy carries a checked one, there is no return link: the
  // address bar's is never followed.
  async function checkReturn(r) {
    if (!returnUnchecked || checking || r.status === 429 || r.status >= 500) return;
    checking = true;
    try {
      const page = await fetch(location.pathname + location.search, { headers: { accept: 'text/html' }, cache: 'no-store' });
      if (page.ok) {
        const copy = new DOMParser().parseFromString(await page.text(), 'text/html').getElementById('lineup');
        if (copy && copy.dataset.returnCheck !== 'pending') {
          returnUnchecked = false;
          returnUrl = copy.dataset.return || '';
          root.dataset.returnCheck = '';
          render();
        }
      } else if (page.status === 400) {
        // Not on the allow-list: the page goes on without a return link.
        returnUnchecked = false;
        root.dataset.returnCheck = 'refused';
      }
    } catch (e) { /* the next answer tries again */ }
    checking = false;
  }

  function schedule(seconds) {
    clearTimeout(timer);
    // Up to 20 % sooner, never later than told, so buyers who loaded together do not poll
    // together and nobody who follows the page is late.
    const ms = Math.max(1, seconds) * 1000 * (0.8 + Math.random() * 0.2);
    timer = setTimeout(poll, ms);
  }

  function retryAfter(response) {
    const header = Number(response && response.headers.get('retry-after'));
    backoff = Math.min(MAX_BACKOFF, Math.max(backoff ? backoff * 2 : 1, Number.isFinite(header) ? header : 1));
    return backoff;
  }

  async function problemOf(response) {
    try { return await response.json(); } catch (e) { return {}; }
  }

  function kindOf(problem) {
    return String(problem.type || '').split('/').pop();
  }

  async function poll() {
    clearTimeout(timer);
    if (!place || !place.token || inflight) return;
    inflight = true;
    let delay = null;
    try {
      const r = await fetch('tokens/' + encodeURIComponent(place.token), { headers: headers(), cache: 'no-store' });
      delay = await answer(r);
    } catch (e) {
      delay = retrying(null);
    }
    inflight = false;
    if (delay != null) schedule(delay);
  }

  // Whether `r` answers load or an outage (429, 503, another 5xx): asked again after a wait.
  function overloaded(r) {
    return r.status === 429 || r.status >= 500;
  }

  // The wait before asking again after `r` (null: no answer), said in the notice.
  function retrying(r) {
    const delay = retryAfter(r);
    notice(t(r && r.status === 429 ? 'wait.busy' : 'wait.retrying', { n: delay }));
    return delay;
  }

  // Shows what a token route answered; returns when to poll again (null: stop).
  async function answer(r) {
    checkReturn(r);
    if (r.ok) {
      const b = await r.json();
      backoff = 0;
      notice('');
      const next = fromStatus(b);
      if (next) show(next);
      return next && next.kind === 'over' ? null : b.pollAfterSeconds || 5;
    }
    const p = await problemOf(r);
    if (overloaded(r)) return retrying(r);
    notice('');
    if (r.status === 401 || r.status === 403) {
      show({ kind: 'over', title: 'wait.auth', rejoin: false });
      return null;
    }
    const known = OVER[kindOf(p)];
    if (known) {
      if (known.forget) forget();
      show({ kind: 'over', title: known.title, why: known.why, rejoin: known.rejoin, detail: known.forget ? '' : p.detail });
      return null;
    }
    show({ kind: 'over', title: 'wait.unknown', rejoin: 'wait.rejoin', detail: p.detail });
    return null;
  }

  // The door (docs/door.md): a queue that asks a new arrival to solve a challenge refuses a
  // join without one as `challenge-required` (or `challenge-failed`). The page reads the
  // queue's `challenge` setting from its summary first: when it is on, the page fetches a
  // challenge, solves it in a Web Worker, ALTCHA's own (wait/altcha.js), while it says it is
  // checking the browser, and joins with the solution in x-altcha, so no join is refused. A
  // refusal all the same (the setting changed since) is answered the same way.
  const DOOR = ['challenge-required', 'challenge-failed'];
  // PBKDF2 iterations a browser derives per ms, roughly: the progress bar's pace. A solver
  // tries 256 times on average (a one-byte key prefix).
  const ITERATIONS_PER_MS = 1000;
  const TRIES = 256;

  // The payload that solves a fresh challenge for `userId`, or null when none came.
  async function passDoor(userId) {
    const r = await fetch('challenge?userId=' + encodeURIComponent(userId), { headers: { accept: 'application/json' }, cache: 'no-store' });
    if (!r.ok) return null;
    const challenge = await r.json();
    show({ kind: 'checking', since: Date.now(), expected: TRIES * challenge.parameters.cost / ITERATIONS_PER_MS });
    const worker = new Worker('wait/altcha.js');
    try {
      const solution = await new Promise((resolve, reject) => {
        worker.onmessage = (m) => resolve(m.data);
        worker.onerror = reject;
        worker.postMessage({ type: 'work', challenge, counterStart: 0, counterStep: 1, timeout: 0 });
      });
      if (!solution || solution.error) return null;
      return btoa(JSON.stringify({ challenge: { parameters: challenge.parameters, signature: challenge.signature }, solution }));
    } finally {
      worker.terminate();
    }
  }

  // Whether the queue's summary says a new arrival solves a challenge first. Unknown (false)
  // when the summary cannot be read: the join's refusal then says so.
  async function doorOn() {
    try {
      const r = await fetch('../' + encodeURIComponent(queue), { headers: { accept: 'application/json' } });
      const b = r.ok ? await r.json() : null;
      const mode = b && b.settings && b.settings.challenge;
      return mode === 'on' || mode === 'adaptive';
    } catch (e) {
      return false;
    }
  }

  // Joins the line, bringing `altcha` (a solved challenge) when it has one. A first join of a
  // queue with the door on solves its challenge first. An answer of load or outage (or none) is
  // sent again after Retry-After, as a poll is, so the buyer need not press again at the
  // on-sale minute.
  async function join(userId, altcha) {
    clearTimeout(timer);
    if (altcha === undefined && await doorOn()) {
      const solved = await passDoor(userId);
      join(userId, solved || null);
      return;
    }
    const again = (r) => { timer = setTimeout(() => join(userId, altcha), retrying(r) * 1000); };
    try {
      const r = await fetch('tokens', {
        method: 'POST',
        headers: Object.assign({ 'content-type': 'application/json', accept: 'application/json' }, altcha ? { 'x-altcha': altcha } : {}),
        body: JSON.stringify({ userId }), cache: 'no-store',
      });
      checkReturn(r);
      const p = r.ok ? null : await problemOf(r);
      if (p && DOOR.includes(kindOf(p)) && !altcha) {
        const solved = await passDoor(userId);
        if (solved) join(userId, solved);
        else show({ kind: 'join', error: p.detail || r.status });
        return;
      }
      // A refusal of the queue's (sold out, closed, full) shows with the operator's message.
      const known = p && OVER[kindOf(p)];
      const refused = known && !known.forget;
      if (!r.ok && !refused && overloaded(r)) {
        again(r);
        return;
      }
      backoff = 0;
      notice('');
      if (refused) {
        show({ kind: 'over', title: known.title, detail: p.detail, rejoin: known.rejoin });
        return;
      }
      if (!r.ok) {
        show({ kind: 'join', error: p.detail || r.status });
        return;
      }
      const b = await r.json();
      place = { token: b.token };
      store.set('sessionStorage', KEY, place);
      const next = fromStatus(b);
      if (next) show(next);
      schedule(b.pollAfterSeconds || 5);
    } catch (e) {
      again(null);
    }
  }

  async function leave() {
    if (!place) return;
    clearTimeout(timer);
    try {
      const r = await fetch('tokens/' + encodeURIComponent(place.token), { method: 'DELETE', headers: headers() });
      if (r.status === 503 || r.status === 429) {
        leaveAgain(retryAfter(r));
        return;
      }
    } catch (e) {
      leaveAgain(retryAfter(null));
      return;
    }
    forget();
    notice('');
    show({ kind: 'over', title: 'wait.left', rejoin: 'wait.rejoin' });
  }

  // A leave the service could not take now is sent again when told: the buyer asked to go.
  function leaveAgain(seconds) {
    notice(t('wait.retrying', { n: seconds }));
    clearTimeout(timer);
    timer = setTimeout(leave, seconds * 1000);
  }

  // The language menu: each language in its own words. A choice loads its table, then
  // redraws.
  function languages() {
    const select = $('lang');
    select.replaceChildren(...Object.entries(I18N.names).map(([l, name]) => el('option', { value: l, lang: l, text: name })));
    select.value = lang;
    select.addEventListener('change', async () => {
      I18N.keep(select.value);
      lang = await I18N.load(select.value);
      select.value = lang;
      render();
    });
  }

  // Background tabs have their timers throttled to about once a minute: poll as soon as the
  // page is visible again.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState !== 'visible') return;
    seen();
    if (ready && place && place.token) poll();
  });

  // The skeleton stays until the strings come.
  I18N.load(lang).then((loaded) => {
    lang = loaded;
    ready = true;
    languages();
    if (place && place.token) {
      render();
      poll();
    } else {
      show({ kind: 'join' });
    }
  });
})();
