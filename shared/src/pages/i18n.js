// Shared by both pages, after LINEUP_LANGUAGES (each language's tag and name; the first is the
// fallback): the language a page opens in (?lang=, else the one chosen before on either page,
// else the first of the browser's that lineup has), keeping a choice, loading a language's
// string table (its own asset, i18n/<tag> beside the script), the buyer's locale for Intl,
// and a string with its {placeholders} filled.
window.LINEUP_I18N = (() => {
  'use strict';
  const NAMES = window.LINEUP_LANGUAGES;
  const TAGS = Object.keys(NAMES);
  const FALLBACK = TAGS[0];
  const KEY = 'lineup:lang';
  // The tables sit beside this script: wait/i18n/ja, rankings/assets/i18n/ja.
  const base = (document.currentScript && document.currentScript.src) || location.href;
  const tables = {};

  // The language lineup has for a BCP 47 tag, or null: Chinese by script, else by region
  // (zh-TW, zh-HK, zh-MO are Traditional; zh, zh-CN, zh-SG and the rest Simplified); any
  // other language by its primary subtag (ja-JP is ja).
  function match(tag) {
    const parts = String(tag || '').toLowerCase().split(/[-_]/);
    const exact = TAGS.find((l) => l.toLowerCase() === parts.join('-'));
    if (exact) return exact;
    if (parts[0] === 'zh') {
      const hant = parts.includes('hant') || (!parts.includes('hans') && ['tw', 'hk', 'mo'].includes(parts[1]));
      return hant ? 'zh-Hant' : 'zh-Hans';
    }
    return TAGS.find((l) => l.toLowerCase() === parts[0]) || null;
  }

  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  return {
    names: NAMES,
    match,
    pick() {
      let saved = null;
      try { saved = localStorage.getItem(KEY); } catch (e) { /* private mode */ }
      for (const c of [new URLSearchParams(location.search).get('lang'), saved, ...(navigator.languages || [])]) {
        const l = match(c);
        if (l) return l;
      }
      return FALLBACK;
    },
    keep(lang) {
      try { localStorage.setItem(KEY, lang); } catch (e) { /* private mode */ }
    },
    // Fetches the table of `lang` (cached like the script), else the fallback's; while
    // neither comes, tries again, waiting twice as long each time, at most 30 s. Resolves
    // to the language it loaded.
    async load(lang) {
      for (let wait = 1000; ; wait = Math.min(30000, wait * 2)) {
        for (const l of new Set([lang, FALLBACK])) {
          if (tables[l]) return l;
          try {
            const r = await fetch(new URL('i18n/' + l, base), { headers: { accept: 'application/json' } });
            if (r.ok) {
              tables[l] = await r.json();
              return l;
            }
          } catch (e) { /* the next round tries again */ }
        }
        await pause(wait);
      }
    },
    // The buyer's locale in `lang`, for Intl: the browser's own tag when it is in that
    // language (en-GB stays en-GB, zh-HK zh-HK), else the language's tag.
    locale(lang) {
      return (navigator.languages || []).find((l) => match(l) === lang) || lang;
    },
    text(lang, k, vars) {
      let s = (tables[lang] && tables[lang][k]) || k;
      for (const [n, v] of Object.entries(vars || {})) s = s.split('{' + n + '}').join(String(v));
      return s;
    },
  };
})();
