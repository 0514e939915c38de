// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A flame graph's script (flamegraph_svg.c writes it into every graph inside a CDATA section,
 * so it must never hold that section's end marker): click a frame to zoom into it (its callers span the width,
 * dimmed; "Reset zoom" goes back), "Search" (or Ctrl+F in a standalone SVG) highlights the
 * frames whose name matches a regular expression and says the share of the graph under them,
 * the line under the graph details the frame under the pointer. Labels are cut to the width
 * the graph is shown at. It reads each frame's place and width in the graph's unit (data-x,
 * data-n) and its name from its tooltip, so the SVG is a whole flame graph without it.
 */
(function () {
	/* Its own graph: where the browser does not name the running script, the last graph
	 * parsed so far (the script ends its graph), or the document (a standalone SVG). */
	var s = document.currentScript, svg = s && s.parentNode;
	if (!svg || svg.localName !== 'svg') {
		var all = document.querySelectorAll('svg.flame');
		svg = all.length ? all[all.length - 1] : document.documentElement;
	}
	var NS = svg.namespaceURI, total = +svg.getAttribute('data-total');
	var unit = svg.getAttribute('data-unit'), standalone = svg.hasAttribute('width');
	var vb = svg.getAttribute('viewBox').split(' '), W = +vb[2], H = +vb[3];
	var btnReset = svg.querySelector('.fg-reset'), btnSearch = svg.querySelector('.fg-search');
	var info = svg.querySelector('.fg-info'), match = svg.querySelector('.fg-match');
	var frames = [], zoomed = null, term = '', cw = 0;

	[].forEach.call(svg.querySelectorAll('g[data-n]'), function (g) {
		var t = g.querySelector('title').textContent, r = g.querySelector('rect');
		var f = { g: g, r: r, label: g.querySelector('text'), x: +g.getAttribute('data-x'),
			  n: +g.getAttribute('data-n'), y: +r.getAttribute('y'),
			  name: t.slice(0, t.lastIndexOf(' (')) };
		g.fgFrame = f;
		frames.push(f);
	});

	function pct(n, of) {
		return (of ? 100 * n / of : 0).toFixed(2) + '%';
	}

	/* The label that fits W pixels, cut with '..' as flamegraph.pl cuts. */
	function fit(name, w) {
		var c = Math.floor((w - 6) / cw);
		if (c >= name.length)
			return name;
		return c < 3 ? '' : name.slice(0, c - 2) + '..';
	}

	/* Every frame placed for the zoomed frame (or the root) at the width shown. */
	function layout() {
		var shown = svg.getBoundingClientRect().width;
		if (!standalone && shown > 0) {
			W = shown;
			svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
			svg.querySelector('text').setAttribute('x', W / 2);
			btnSearch.setAttribute('x', W - 10);
			match.setAttribute('x', W);
		}
		if (!cw) {
			var m = document.createElementNS(NS, 'text');
			m.textContent = 'MMMMMMMMMM';
			svg.appendChild(m);
			cw = m.getComputedTextLength() / 10 || 6.7;
			svg.removeChild(m);
		}
		var z = zoomed || { x: 0, n: total, y: Infinity }, k = W / z.n;
		frames.forEach(function (f) {
			var on = f.x < z.x + z.n && f.x + f.n > z.x, anc = f.y > z.y;
			var x = anc ? 0 : (f.x - z.x) * k, w = anc ? W : f.n * k;
			f.g.style.display = on ? '' : 'none';
			f.g.classList.toggle('fg-anc', on && anc);
			if (!on)
				return;
			f.r.setAttribute('x', x.toFixed(1));
			f.r.setAttribute('width', w.toFixed(1));
			var text = fit(f.name, w);
			if (!f.label && text) {
				f.label = document.createElementNS(NS, 'text');
				f.label.setAttribute('y', f.y + 12);
				f.g.appendChild(f.label);
			}
			if (f.label) {
				f.label.setAttribute('x', (x + 3).toFixed(1));
				f.label.textContent = text;
			}
		});
		btnReset.style.display = zoomed ? 'inline' : 'none';
	}

	/* Frames whose name matches RE highlighted; the share of the samples under them. */
	function search(re) {
		var hits = [], sum = 0, end = -1;
		term = re;
		frames.forEach(function (f) {
			var hit = !!re && re.test(f.name);
			f.g.classList.toggle('fg-hit', hit);
			if (hit)
				hits.push(f);
		});
		hits.sort(function (a, b) { return a.x - b.x; });
		hits.forEach(function (f) {
			if (f.x + f.n > end) {
				sum += f.x + f.n - Math.max(f.x, end);
				end = f.x + f.n;
			}
		});
		match.textContent = re ? 'Matched: ' + pct(sum, total) : ' ';
		btnSearch.textContent = re ? 'Reset search' : 'Search';
	}

	function ask() {
		if (term)
			return search('');
		var t = window.prompt('Search frames (a regular expression)', '');
		if (!t)
			return;
		try {
			search(new RegExp(t));
		} catch (e) {
			match.textContent = 'Not a regular expression: ' + t;
		}
	}

	svg.addEventListener('click', function (e) {
		var g = e.target.closest('g[data-n]');
		if (g)
			zoomed = g.fgFrame;
		else if (e.target === btnReset)
			zoomed = null;
		else if (e.target === btnSearch)
			return ask();
		else
			return;
		layout();
	});
	svg.addEventListener('mouseover', function (e) {
		var g = e.target.closest('g[data-n]'), f = g && g.fgFrame;
		if (!f)
			return;
		info.textContent = f.name + ' (' + f.n + ' ' + unit + ', ' + pct(f.n, total) +
			(zoomed && f.y <= zoomed.y ? ', ' + pct(f.n, zoomed.n) + ' of the zoomed frame' : '') + ')';
	});
	svg.addEventListener('mouseout', function () {
		info.textContent = ' ';
	});
	if (standalone)
		document.addEventListener('keydown', function (e) {
			if ((e.ctrlKey || e.metaKey) && e.key === 'f') {
				e.preventDefault();
				ask();
			}
		});
	else
		window.addEventListener('resize', layout);
	btnSearch.style.display = 'inline';
	layout();
})();
