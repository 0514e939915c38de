// Run by tests/e2e/test_report.py inside a copy of a report page, after the page's own
// scripts: it acts as a user would (clicks a frame, the reset button, types a search) and
// writes what the page then shows as JSON into a pre element (id probe) for --dump-dom.
// PROBE_ARGS: {section id: {"click": regex of the frame to click (its widest), "search": regex}};
// the section "svg" is a standalone SVG document (export --format svg), its probe a <text>.
(function (args) {
	var out = { viewport: document.documentElement.clientWidth,
		    page_width: document.documentElement.scrollWidth, tables: [], pres: [], flames: {} };
	[].forEach.call(document.querySelectorAll('pre:not(#probe)'), function (p) {
		out.pres.push({ id: p.closest('[id]').id, scroll: p.scrollWidth - p.clientWidth });
	});
	[].forEach.call(document.querySelectorAll('table'), function (t) {
		var r = t.getBoundingClientRect();
		out.tables.push({ id: t.closest('[id]').id, left: r.left, right: r.right,
				  scroll: t.parentNode.scrollWidth - t.parentNode.clientWidth });
	});
	function name(g) {
		var t = g.querySelector('title').textContent;
		return t.slice(0, t.lastIndexOf(' ('));
	}
	function click(el) {
		el.dispatchEvent(new MouseEvent('click', { bubbles: true }));
	}
	Object.keys(args).forEach(function (sec) {
		var svg = sec === 'svg' ? document.documentElement
			: document.querySelector('#' + sec + ' svg.flame'), a = args[sec], r = {};
		out.flames[sec] = r;
		if (!svg)
			return;
		var s = svg.getBoundingClientRect(), gs = [].slice.call(svg.querySelectorAll('g[data-n]'));
		function box(g) {
			var b = g.querySelector('rect').getBoundingClientRect();
			return [b.left - s.left, b.width];
		}
		function visible() {
			return gs.filter(function (g) { return g.style.display !== 'none'; }).map(name);
		}
		r.width = s.width;
		r.frames = gs.length;
		r.labels = [].filter.call(svg.querySelectorAll('g[data-n] text'), function (t) {
			return t.textContent.length > 0;
		}).length;
		var re = new RegExp(a.click), target = null;
		gs.forEach(function (g) {
			if (re.test(name(g)) && (!target || +g.dataset.n > +target.dataset.n))
				target = g;
		});
		if (!target)
			return;
		r.clicked = name(target);
		r.before = box(target);
		target.querySelector('rect').dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
		r.details = svg.querySelector('.fg-info').textContent;
		click(target.querySelector('rect'));
		r.zoomed = box(target);
		r.zoomed_label = target.querySelector('text').textContent;
		r.zoomed_visible = visible();
		r.reset_shown = svg.querySelector('.fg-reset').getBoundingClientRect().width > 0;
		click(svg.querySelector('.fg-reset'));
		r.reset = box(target);
		r.reset_visible = visible().length;
		window.prompt = function () { return a.search; };
		click(svg.querySelector('.fg-search'));
		r.hits = [].map.call(svg.querySelectorAll('.fg-hit'), function (g) {
			return [name(g), +g.dataset.x, +g.dataset.n,
				getComputedStyle(g.querySelector('rect')).fill];
		});
		r.matched = svg.querySelector('.fg-match').textContent;
		r.search_button = svg.querySelector('.fg-search').textContent;
	});
	var pre = document.body ? document.createElement('pre')
		: document.createElementNS(document.documentElement.namespaceURI, 'text');
	pre.id = 'probe';
	pre.textContent = JSON.stringify(out);
	(document.body || document.documentElement).appendChild(pre);
})(PROBE_ARGS);
