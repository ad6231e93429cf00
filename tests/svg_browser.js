// svg_browser.js - runs inside headless Chromium on the page svg_browser.sh
// builds (memory_flow.svg inline in XHTML, PROBES = where known blocks are
// drawn).  For each probe it asks the browser which element is under the
// pointer there and records the <title> a hover would show, as JSON in
// <pre id="memflow-result"> for the shell test to read from --dump-dom.
(function () {
    var result = {};
    Object.keys(PROBES).forEach(function (key) {
        var p = PROBES[key];
        var el = document.elementFromPoint(p.x + 0.5, p.y + 0.5);
        var title = null;
        for (var e = el; e && e.nodeType === 1 && title === null; e = e.parentNode) {
            for (var c = e.firstElementChild; c; c = c.nextElementSibling) {
                if (c.localName === "title") {
                    title = c.textContent;
                    break;
                }
            }
        }
        result[key] = { tag: el ? el.localName : null, title: title };
    });
    document.getElementById("memflow-result").textContent = JSON.stringify(result);
})();
