// Draw each figure from its JSON, wire the PNG/SVG buttons, and open the episode list a
// link points at (a closed <details> would hide its target).
(function () {
  document.querySelectorAll("script.figure").forEach(function (node) {
    var figure = JSON.parse(node.textContent);
    var config = JSON.parse(node.getAttribute("data-config"));
    Plotly.newPlot(node.getAttribute("data-plot"), figure.data, figure.layout, config);
  });
  document.querySelectorAll(".export button").forEach(function (button) {
    button.addEventListener("click", function () {
      var id = button.getAttribute("data-plot");
      var el = document.getElementById(id);
      Plotly.downloadImage(el, {
        format: button.getAttribute("data-format"), filename: id.replace(/^plot-/, ""),
        width: el.offsetWidth, height: el.offsetHeight, scale: 2
      });
    });
  });
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (el && el.tagName === "DETAILS") { el.open = true; el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
