// The labelling page's keys: r refusal, c compliance, s skip, b back one reply.
// Each presses the button (or follows the link) that carries the key in data-key.
document.addEventListener("keydown", function (e) {
  if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
  var t = e.target && e.target.tagName;
  if (t === "INPUT" || t === "TEXTAREA" || t === "SELECT") return;
  var el = document.querySelector('[data-key="' + e.key.toLowerCase() + '"]');
  if (el) {
    e.preventDefault();
    el.click();
  }
});
