// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The report page's zoom; see page_zoom.h. */
#include "page.h"
#include "page_axis.h"
#include "page_zoom.h"

/*
 * VIEW is the shown part of the recording as shares [a, b]; each plot's viewBox shows it,
 * each tick says its time. A drag is measured on the timeline's own plot, in its shares.
 */
static const char script[] =
	"(function(){var X=%d,W=%d,SW=%d,span=%.0f,view=[0,1],ns='http://www.w3.org/2000/svg';\n"
	"var plots=[].slice.call(document.querySelectorAll('svg.plot'));\n"
	"function secs(s){return s>=100?s.toFixed(0)+' s':s>=1||s===0?+s.toPrecision(3)+' s':"
	"s>=1e-3?+(s*1e3).toPrecision(3)+' ms':+(s*1e6).toPrecision(3)+' \\u00b5s'}\n"
	"function apply(){plots.forEach(function(p){var v=p.viewBox.baseVal;v.x=X+view[0]*W;"
	"v.width=(view[1]-view[0])*W});[].forEach.call(document.querySelectorAll('text.tick'),"
	"function(t){var f=+t.getAttribute('data-f');t.textContent=secs((view[0]+f*(view[1]-"
	"view[0]))*span/1e9)});document.body.setAttribute('data-view',view.join(' '))}\n"
	"var shade=[].slice.call(document.querySelectorAll('#tl-ranges g.shade rect'));\n"
	"plots.forEach(function(p){if(!shade.length||p.closest('#tl-ranges'))return;var v=p.viewBox."
	"baseVal,g=document.createElementNS(ns,'g');g.setAttribute('class','bands shade');"
	"shade.forEach(function(r){var c=r.cloneNode(true);c.setAttribute('y',v.y);"
	"c.setAttribute('height',v.height);g.appendChild(c)});p.insertBefore(g,p.firstChild)});\n"
	"function share(svg,e){var r=svg.getBoundingClientRect(),x=(e.clientX-r.left)/r.width*SW;"
	"return Math.min(1,Math.max(0,(x-X)/W))}\n"
	"[].forEach.call(document.querySelectorAll('figure.timeline>svg'),function(svg){var a=null;"
	"svg.addEventListener('mousedown',function(e){a=share(svg,e);e.preventDefault()});"
	"svg.addEventListener('mouseup',function(e){if(a===null)return;var b=share(svg,e),w="
	"view[1]-view[0];if(Math.abs(b-a)*W<3)view=[0,1];else view=[view[0]+Math.min(a,b)*w,"
	"view[0]+Math.max(a,b)*w];a=null;apply()})});apply()})();\n";

void page_zoom__script(FILE *f, const struct page *p)
{
	fprintf(f, "<script>");
	fprintf(f, script, PLOT_X, PLOT_W, SVG_W, (double)(p->end - p->origin));
	fprintf(f, "</script>\n");
}
