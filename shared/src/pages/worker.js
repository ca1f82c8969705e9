// The waiting room's service worker. The page shows the turn's notification through it; a
// click brings the page back, or opens it again with the place in the fragment.
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('notificationclick', (e) => {
  e.notification.close();
  const url = String(e.notification.data || ''), bare = (u) => u.split('#')[0];
  e.waitUntil(self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then((pages) => {
    const page = pages.find((p) => bare(p.url) === bare(url));
    return page ? page.focus() : url && self.clients.openWindow(url);
  }));
});
