// Shared by the rankings page and the badge, after i18n.js: a row's movement
// (docs/rankings.md, "Movement") as the mark shown beside its rank (▲3, ▼2, –, NEW), which
// screen readers skip, and the words they say instead, in the page's language and by the
// period ("up 3 places since yesterday"). `t` is the page's string lookup, `number` its
// Intl number format. Null when there is nothing to show: no movement (the all-time, rolling
// and trending boards), or a kind this script does not know.
window.LINEUP_MOVE = (movement, period, t, number) => {
  'use strict';
  const kind = movement && movement.kind;
  // A period without words for "since" (none carries movement yet) says the move alone.
  const since = ['daily', 'weekly', 'monthly'].includes(period) ? t('rank.since.' + period) : '';
  const say = (key, vars) => t(key, { since, ...vars }).trim();
  if ((kind === 'up' || kind === 'down') && movement.by > 0) {
    const n = number(movement.by);
    const words = say('rank.move.' + kind + (movement.by === 1 ? '.one' : ''), { n });
    return { kind, mark: (kind === 'up' ? '▲' : '▼') + n, words };
  }
  if (kind === 'same') return { kind, mark: '–', words: say('rank.move.same') };
  if (kind === 'new') return { kind, mark: t('rank.move.new.mark'), words: t('rank.move.new') };
  return null;
};
