// Run by tests/e2e/test_report_page.py in a page that holds report pages in iframes (or in a
// copy of one page): for each, what a reader sees, as JSON in a pre element (id probe) for
// --dump-dom. PROBE_ARGS: {"drag": [x0, x1] share of a timeline's width to drag over, or null}.
(function (args) {
	function text(el) {
		return el ? el.textContent.replace(/\s+/g, ' ').trim() : null;
	}
	function see(doc, win) {
		var out = {}, vw = doc.documentElement.clientWidth, body = doc.body;
		var first = body.querySelector('header + section');
		out.first_section = first ? first.id : null;
		var v = doc.getElementById('verdict');
		out.headline = text(v && v.querySelector('.headline'));
		out.claims = v ? [].map.call(v.querySelectorAll('.claims li'), function (li) {
			var a = li.querySelector('a'), t = li.querySelector('.text').cloneNode(true);
			if (t.querySelector('a'))
				t.removeChild(t.querySelector('a'));
			return { mark: text(li.querySelector('.mark')), kind: text(li.querySelector('.kind')),
				 share: text(li.querySelector('.share')), text: text(t),
				 link: a ? text(a) : null,
				 target: a ? !!doc.getElementById(a.getAttribute('href').slice(1)) : null };
		}) : [];
		out.more = text(v && v.querySelector('.more'));
		out.figures = [].map.call(doc.querySelectorAll('#figures .fig'), function (fg) {
			return [text(fg.querySelector('.l')), text(fg.querySelector('.v')),
				fg.querySelector('.v').title];
		});
		var d = doc.querySelector('#info details');
		out.info_open = d ? d.open : null;
		out.info_cells = d ? [].map.call(d.querySelectorAll('th, td, p.rows'), function (c) {
			return c.textContent;
		}) : null;
		out.viewport = vw;
		out.page_width = doc.documentElement.scrollWidth;
		if (d)
			d.open = true; // measured unfolded too
		out.boxes = [];
		[].forEach.call(body.querySelectorAll('table, pre, figure, section, details, .fig, svg'),
				function (b) {
			var r = b.getBoundingClientRect(), p = b.tagName === 'TABLE' ? b.parentNode : b;
			if (r.right > vw || r.width > 1280 || p.scrollWidth - p.clientWidth > 0)
				out.boxes.push({ tag: b.tagName, id: (b.closest('[id]') || {}).id,
						 right: r.right, width: r.width,
						 scroll: p.scrollWidth - p.clientWidth });
		});
		// A cell's one word (a process name, a number, a title) drawn on two lines ("pytho n3").
		out.broken = [];
		[].forEach.call(body.querySelectorAll('td, th'), function (c) {
			var t = c.textContent.trim(), r = doc.createRange(), lines = {};
			if (!t || /\s/.test(t) || t.length > 24)
				return;
			r.selectNodeContents(c);
			[].forEach.call(r.getClientRects(), function (q) {
				if (q.width > 0)
					lines[Math.round(q.top)] = 1;
			});
			if (Object.keys(lines).length > 1)
				out.broken.push(t);
		});
		out.bands = {};
		[].forEach.call(doc.querySelectorAll('#tl-ranges g.bands'), function (g) {
			out.bands[g.getAttribute('data-row')] = g.querySelectorAll('rect').length;
		});
		out.lanes = [].map.call(doc.querySelectorAll('#tl-threads text.lane-name'), text);
		out.lane_groups = doc.querySelectorAll('#tl-threads g.lane').length;
		if (args && args.drag)
			out.zoom = drag(doc, win, args.drag);
		function look(el) {
			var c = win.getComputedStyle(el);
			return [c.fontSize, c.fontWeight, c.fontFamily, c.borderBottomWidth].join(' ');
		}
		out.families = [].map.call(doc.querySelectorAll('section.family'), function (sec) {
			var h = sec.querySelector(':scope > h2');
			return { id: sec.id, name: h ? h.firstChild.textContent.trim() : null,
				 what: text(h && h.querySelector('.what')), h2: h ? look(h) : null,
				 reports: [].map.call(sec.querySelectorAll('.report'), function (r) {
					 return [r.id, look(r.querySelector('h3')), look(r.querySelector('table')),
						 look(r.querySelector('td') || r.querySelector('th'))];
				 }) };
		});
		out.reports = {};
		[].forEach.call(doc.querySelectorAll('.report'), function (r) {
			out.reports[r.id] = [].map.call(r.querySelectorAll('tbody tr'), function (tr) {
				return [].map.call(tr.querySelectorAll('td'), function (td) {
					return [td.textContent, td.title];
				});
			});
		});
		return out;
	}
	// Each plot's shown range [x, width] in its viewBox, every tick's label, the shaded bands
	// drawn in each plot.
	function state(doc) {
		return { plots: [].map.call(doc.querySelectorAll('figure.timeline svg.plot'), function (p) {
				var v = p.viewBox.baseVal;
				return [p.closest('figure').id, +v.x.toFixed(2), +v.width.toFixed(2),
					p.querySelectorAll(':scope > g.shade rect').length];
			}),
			 ticks: [].map.call(doc.querySelectorAll('figure.timeline text.tick'), text) };
	}
	// A user's drag over share [a, b] of the plot of the timeline of index I, then a click.
	function mouse(win, svg, type, share) {
		var r = svg.getBoundingClientRect(), X = 60 / 960 * r.width, W = 890 / 960 * r.width;
		svg.dispatchEvent(new win.MouseEvent(type, { bubbles: true, clientX: r.left + X + share * W,
							     clientY: r.top + 20 }));
	}
	function drag(doc, win, d) {
		var svgs = doc.querySelectorAll('figure.timeline > svg'), res = { before: state(doc) };
		if (!svgs.length)
			return null;
		res.timelines = svgs.length;
		var first = svgs[d.first], second = svgs[d.second < 0 ? svgs.length + d.second : d.second];
		mouse(win, first, 'mousedown', d.a);
		mouse(win, first, 'mouseup', d.b);
		res.dragged = state(doc);
		mouse(win, second, 'mousedown', 0.5);
		mouse(win, second, 'mouseup', 1);
		res.again = state(doc);
		mouse(win, second, 'mousedown', 0.3);
		mouse(win, second, 'mouseup', 0.3);
		res.clicked = state(doc);
		return res;
	}
	var frames = document.querySelectorAll('iframe'), out = {};
	function done() {
		var pre = document.createElement('pre');
		pre.id = 'probe';
		pre.textContent = JSON.stringify(out);
		document.body.appendChild(pre);
	}
	if (!frames.length) {
		out.page = see(document, window);
		done();
		return;
	}
	[].forEach.call(frames, function (f) {
		out[f.name] = see(f.contentDocument, f.contentWindow);
	});
	done();
})(PROBE_ARGS);
