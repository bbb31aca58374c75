// The out-of-scope curve on the retraining page (routing/templates/admin/routing/intent/
// retraining.html): a click, Enter or Space on a point presses that row's "Use this point"
// button. A file of its own, not an inline script: the Content-Security-Policy runs only
// this origin's script files.
document.querySelectorAll("#oos-chart .oos-point").forEach(function (point) {
  function choose() {
    var button = document.querySelector('#oos-curve button[value="' + point.dataset.threshold + '"]');
    if (button) { button.click(); }
  }
  point.addEventListener("click", choose);
  point.addEventListener("keydown", function (event) {
    if (event.key === "Enter" || event.key === " ") { choose(); }
  });
});
