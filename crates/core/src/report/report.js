// report.html's script: inlined by crates/core/src/report/html.rs. Reads the JSON data block and
// draws every section as SVG or tables. It loads nothing (the page's CSP forbids it);
// all data strings go through esc() because node and call names come from the run.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var root = document.getElementById('report');

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function num(x) { return typeof x === 'number' && isFinite(x) ? x : 0; }
  function fmtS(s) {
    s = num(s);
    var a = Math.abs(s);
    if (a === 0) return '0 s';
    if (a >= 100) return s.toFixed(0) + ' s';
    if (a >= 1) return s.toPrecision(3) + ' s';
    if (a >= 1e-3) return (s * 1e3).toPrecision(3) + ' ms';
    if (a >= 1e-6) return (s * 1e6).toPrecision(3) + ' µs';
    return (s * 1e9).toPrecision(3) + ' ns';
  }
  function fmtB(b) {
    b = num(b);
    var u = ['B', 'kB', 'MB', 'GB', 'TB'], i = 0;
    while (Math.abs(b) >= 1000 && i < u.length - 1) { b /= 1000; i++; }
    return (i === 0 ? b.toFixed(0) : b.toPrecision(3)) + ' ' + u[i];
  }
  function fmtPct(p) { return p === null || p === undefined || !isFinite(p) ? '–' : (p >= 0 ? '+' : '') + p.toFixed(1) + ' %'; }
  function rel(p, m) { return m > 0 ? (p - m) / m * 100 : null; }
  function section(id, title, what) {
    var s = document.createElement('section');
    s.id = id;
    s.innerHTML = '<h2>' + esc(title) + '</h2>' + (what ? '<p class="what">' + what + '</p>' : '');
    root.appendChild(s);
    return s;
  }
  function add(sec, html) {
    var d = document.createElement('div');
    d.innerHTML = html;
    sec.appendChild(d);
    return d;
  }
  function guard(id, title, f) {
    try { f(); } catch (e) {
      var s = document.getElementById(id) || section(id, title, '');
      add(s, '<p class="error">This section could not be drawn: ' + esc(e && e.message) + '</p>');
    }
  }
  var PALETTE = ['#4a7fc1', '#d2453d', '#2e9e6a', '#f0a04b', '#8a5cc2', '#1fa3b3', '#c2548f',
    '#7a8c2a', '#b5762a', '#4b5563', '#e0609a', '#3b9bd8'];
  var SIZES = ['<1KiB', '1KiB-64KiB', '64KiB-1MiB', '>=1MiB'];
  var R = D.run || {};

  // Header and navigation.
  var hdr = document.createElement('header');
  var status = R.complete ? 'complete run' : 'INCOMPLETE run';
  hdr.innerHTML = '<h1>pmpi-predict report</h1><div class="sub">' + esc(R.ranks) + ' ranks on ' +
    esc(R.nodes) + ' node' + (R.nodes === 1 ? '' : 's') + ' · penalty model ' + esc(R.model) +
    ' · profile ' + esc(R.profile) + ' · ' + status + '</div>';
  var nav = document.createElement('nav');
  [['run', 'Run'], ['ranks', 'Time per rank'], ['matrix', 'Node traffic'],
    ['accuracy', 'Measured vs predicted'], ['erel', 'Error by size'], ['hotspots', 'Hotspots']]
    .forEach(function (l) {
      var a = document.createElement('a');
      a.href = '#' + l[0];
      a.textContent = l[1];
      nav.appendChild(a);
    });
  document.body.insertBefore(nav, root);
  document.body.insertBefore(hdr, nav);

  // The run.
  guard('run', 'Run', function () {
    var s = section('run', 'Run', 'What was recorded and how it was predicted. Makespans are ' +
      'the last call\'s end from the start of recording; predicted ones come from the causal ' +
      'replay under the penalty model and without contention (baseline).');
    var ms = R.makespan_s || {};
    var drops = num(R.dropped) + num(R.lost);
    var rows = [
      ['Ranks', '<span id="rank-count">' + esc(R.ranks) + '</span>' +
        (R.world_size !== R.ranks ? ' of ' + esc(R.world_size) + ' (missing: ' + esc((R.missing_ranks || []).join(', ')) + ')' : '')],
      ['Nodes', '<span id="node-count">' + esc(R.nodes) + '</span>'],
      ['MPI library', esc(String(R.mpi_library || '–').split('\n')[0])],
      ['Penalty model', '<span id="model">' + esc(R.model) + '</span>'],
      ['Profile', esc(R.profile)],
      ['Measured makespan', '<b>' + fmtS(ms.measured) + '</b>'],
      ['Predicted makespan', fmtS(ms.predicted) + ' (' + fmtPct(rel(ms.predicted, ms.measured)) + ')'],
      ['Contention-free makespan', fmtS(ms.free) + ' (' + fmtPct(rel(ms.free, ms.measured)) + ')'],
      ['Records', '<span id="record-count">' + esc(num(R.records).toLocaleString('en-US')) + '</span>'],
      ['Dropped records', '<span id="dropped" class="tag ' + (drops ? 'bad' : 'ok') + '">' + esc(drops) + '</span>' +
        (num(R.dropped_requests) ? ' · ' + esc(R.dropped_requests) + ' requests not tracked' : '')],
      ['Run', R.complete ? '<span class="tag ok">complete: every rank reached MPI_Finalize</span>'
        : '<span class="tag bad">incomplete</span> ' + esc((R.ended || []).map(function (e) {
          return 'rank ' + e.rank + ': ' + (e.ended_by || 'no MPI_Finalize');
        }).join('; '))]
    ];
    (R.cpu_sharing || []).forEach(function (c) {
      rows.push(['CPUs', '<span class="tag warnbg" id="cpu-sharing">' + esc(c.ranks) + ' ranks on ' + esc(c.cpus) +
        ' CPUs of one machine</span> (' + esc((c.nodes || []).join(', ')) + '): measured waits include waiting for a ' +
        'CPU, which the replay predicts: a rank whose call could end while every CPU ran a rank that computes waits ' +
        'until one of them enters MPI, at most a time slice' +
        (c.time_slice_s ? ' (' + esc((c.time_slice_s * 1e3).toFixed(2)) + ' ms)' : '')]);
    });
    var net = R.network || [];
    if (net.length) {
      var rto = net.reduce(function (a, n) { return a + num(n.retransmission_timeouts); }, 0);
      var sent = net.reduce(function (a, n) { return a + num(n.segments_sent); }, 0);
      var re = net.reduce(function (a, n) { return a + num(n.segments_retransmitted); }, 0);
      var hit = net.filter(function (n) { return num(n.retransmission_timeouts) > 0; });
      rows.push(['TCP', '<span id="tcp-timeouts" class="tag ' + (rto ? 'warnbg' : 'ok') + '">' + esc(rto) +
        ' retransmission timeout' + (rto === 1 ? '' : 's') + '</span> · ' + esc(re.toLocaleString('en-US')) + ' of ' +
        esc(sent.toLocaleString('en-US')) + ' segments retransmitted' +
        (hit.length ? ': ' + esc(hit.map(function (n) {
          var at = n.timeouts_at || [];
          return n.node + ' ' + n.retransmission_timeouts + (at.length ? ' at ' +
            at.slice(0, 3).map(function (t) {
              return t.from_s.toFixed(2) + '–' + t.to_s.toFixed(2) + ' s';
            }).join(', ') + (at.length > 3 ? ' and ' + (at.length - 3) + ' more' : '') : '');
        }).join('; ')) + '. Each held a connection for at least the timeout (200 ms on Linux), which no ' +
        'model predicts: calls whose messages it held took longer than predicted' : '')]);
    }
    var ib = net.filter(function (n) { return n.infiniband; });
    if (ib.length) {
      rows.push(['InfiniBand', esc(ib.map(function (n) {
        var i = n.infiniband;
        return n.node + ': ' + i.ports + ' port' + (i.ports === 1 ? '' : 's') + ', sent ' + fmtB(i.xmit_bytes) +
          ', received ' + fmtB(i.rcv_bytes) + ', ' + num(i.xmit_wait).toLocaleString('en-US') +
          ' ticks waiting to send' + (i.xmit_discards ? ', ' + i.xmit_discards + ' discarded' : '');
      }).join('; ')) + ' (the ports\' port_xmit_wait counts the ticks they had data to send and could not: ' +
        'the fabric\'s congestion)']);
    }
    var np = R.not_predicted || {};
    var npk = Object.keys(np);
    if (npk.length) {
      rows.push(['Calls not predicted', '<span class="tag warnbg">' + esc(npk.map(function (k) {
        return np[k] + ' ' + k;
      }).join(', ')) + '</span> (measured time kept)']);
    }
    var kv = '<table class="kv">' + rows.map(function (r) {
      return '<tr><th>' + r[0] + '</th><td>' + r[1] + '</td></tr>';
    }).join('') + '</table>';
    var pl = '<table id="placement"><tr><th>node</th><th>ranks</th><th class="num">count</th></tr>' +
      (R.placement || []).map(function (p) {
        return '<tr class="node-row"><td>' + esc(p.node) + '</td><td>' + esc(p.ranks) +
          '</td><td class="num">' + esc(p.count) + '</td></tr>';
      }).join('') + '</table>';
    add(s, '<div class="cols"><div>' + kv + '</div><div><h3 style="margin-top:0">Placement (rank → node)</h3>' + pl + '</div></div>');
  });

  // Time per rank.
  guard('ranks', 'Time per rank', function () {
    var s = section('ranks', 'Where each rank\'s time went',
      'Upper bar, <b>measured</b> from the start of recording to the rank\'s last call: <b>compute</b> (outside MPI), ' +
      '<b>wait</b> (blocked on a late partner: calls.csv\'s wait_s), <b>polling</b> (unsuccessful MPI_Test and MPI_Iprobe calls ' +
      'outside any row: summary.json\'s unsuccessful_polls) and <b>transfer</b> (the rest of its MPI time). ' +
      'Lower bar, <b>predicted</b> by the replay: the same compute and polling, the predicted wait and transfer, and within transfer ' +
      'the <b>contention</b> the penalty model adds (calls.csv\'s contention_s). On the right: the measured share of MPI time.');
    var ranks = D.ranks || [];
    var total = function (r, p) {
      return num(r.compute_s) + num(r.poll_s) + (p ? num(r.pred_wait_s) + num(r.pred_transfer_s) : num(r.wait_s) + num(r.transfer_s));
    };
    var maxSpan = Math.max.apply(null, ranks.map(function (r) { return Math.max(total(r, false), total(r, true)); }).concat([1e-12]));
    var dense = ranks.length > 48;
    var hM = dense ? 6 : 14, hP = dense ? 4 : 8, gap = dense ? 3 : 9;
    var rowH = hM + 1 + hP;
    var left = 150, W = 1100, plotW = W - left - 90, top = 24;
    var H = top + ranks.length * (rowH + gap) + 8;
    var x = function (v) { return left + num(v) / maxSpan * plotW; };
    var o = ['<svg id="rank-bars" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '">'];
    o.push('<g class="axis">');
    ticks(0, maxSpan, 6).forEach(function (t) {
      o.push('<line x1="' + x(t) + '" x2="' + x(t) + '" y1="' + (top - 4) + '" y2="' + (H - 6) + '"/>');
      o.push('<text x="' + x(t) + '" y="' + (top - 8) + '" text-anchor="middle">' + esc(fmtS(t)) + '</text>');
    });
    o.push('</g>');
    function bar(cls, r, y, h, parts) {
      var acc = 0;
      parts.forEach(function (p) {
        var v = num(p[1]);
        if (v <= 0) return;
        o.push('<rect class="' + cls + ' ' + p[0] + '" x="' + x(acc) + '" y="' + y + '" width="' + Math.max(0.5, x(acc + v) - x(acc)) +
          '" height="' + h + '" fill="var(--' + p[0] + ')"><title>rank ' + esc(r.rank) + ' · ' +
          (cls === 'seg' ? 'measured ' : 'predicted ') + p[0] + ': ' + esc(fmtS(v)) + '</title></rect>');
        acc += v;
      });
      return acc;
    }
    ranks.forEach(function (r, i) {
      var y = top + i * (rowH + gap);
      o.push('<g class="rank-bar" data-rank="' + esc(r.rank) + '">');
      if (!dense || i % 4 === 0) {
        o.push('<text x="' + (left - 8) + '" y="' + (y + hM - 2) + '" text-anchor="end">rank ' + esc(r.rank) +
          (dense ? '' : ' <tspan fill="#5b6474">' + esc(r.node) + '</tspan>') + '</text>');
      }
      var m = bar('seg', r, y, hM, [['compute', r.compute_s], ['wait', r.wait_s], ['polling', r.poll_s], ['transfer', r.transfer_s]]);
      var p = bar('pseg', r, y + hM + 1, hP, [['compute', r.compute_s], ['wait', r.pred_wait_s], ['polling', r.poll_s],
        ['transfer', Math.max(0, num(r.pred_transfer_s) - num(r.contention_s))], ['contention', r.contention_s]]);
      var share = r.span_s > 0 ? num(r.mpi_s) / r.span_s * 100 : 0;
      if (!dense) {
        o.push('<text x="' + (x(Math.max(m, p)) + 6) + '" y="' + (y + hM - 2) + '" fill="#5b6474">' + share.toFixed(0) + ' % MPI</text>');
      }
      o.push('<title>rank ' + esc(r.rank) + ' on ' + esc(r.node) + ' (' + esc(r.records) + ' records). Measured: compute ' +
        esc(fmtS(r.compute_s)) + ', wait ' + esc(fmtS(r.wait_s)) + ', polling ' + esc(fmtS(r.poll_s)) + ', transfer ' + esc(fmtS(r.transfer_s)) +
        '. Predicted: wait ' + esc(fmtS(r.pred_wait_s)) + ', transfer ' + esc(fmtS(r.pred_transfer_s)) +
        ' of which contention ' + esc(fmtS(r.contention_s)) + '</title>');
      o.push('</g>');
    });
    o.push('</svg>');
    add(s, legend([['compute', 'var(--compute)'], ['wait', 'var(--wait)'], ['polling', 'var(--polling)'], ['transfer', 'var(--transfer)'],
      ['contention', 'var(--contention)']], 'upper bar measured, lower bar predicted') + o.join(''));
  });

  // Node-to-node traffic.
  guard('matrix', 'Node traffic', function () {
    var M = D.matrix || {};
    var nodes = M.nodes || [];
    var s = section('matrix', 'Node-to-node traffic',
      'Rows send, columns receive. <b>Bytes</b>: every message of the run, point-to-point and the messages ' +
      'of the collective algorithms assumed; the diagonal stays within a node. <b>Contention</b>: seconds by which ' +
      'bandwidth sharing slowed the messages of each pair in the replay, Σ dt·(1 − 1/penalty) over its intervals ' +
      'and messages in flight, and for each collective operation (timed by its own model) its members\' contention ' +
      'shared among its inter-node pairs by bytes.' + (nodes.length === 1 ? ' <b>One node</b>: every message is intra-node and no network ' +
      'contention is modelled.' : ''));
    add(s, '<div class="cols"><div><h3>Bytes</h3>' + heat('matrix-bytes', nodes, M.bytes, fmtB, '74,127,193') +
      '</div><div><h3>Contention (seconds of slowdown)</h3>' + heat('matrix-contention', nodes, M.contention_s, fmtS, '210,69,61') +
      '</div></div>');
  });

  // Measured vs predicted.
  guard('accuracy', 'Measured vs predicted', function () {
    var s = section('accuracy', 'Measured vs predicted, per call family',
      'One point per call and message-size class: the mean measured time against the mean predicted time under ' +
      'the penalty model (filled circle) and without contention (hollow diamond, the baseline). On the diagonal the ' +
      'prediction is exact; the grey band is a factor of 2.');
    var F = (D.families || []).filter(function (f) { return f.count > 0; });
    if (!F.length) { add(s, '<p class="note">No predicted calls.</p>'); return; }
    var calls = [];
    F.forEach(function (f) { if (calls.indexOf(f.call) < 0) calls.push(f.call); });
    var color = function (c) { return PALETTE[calls.indexOf(c) % PALETTE.length]; };
    var vals = [];
    // Below a nanosecond (the clocks' resolution) a time is drawn at the axis' floor: a
    // predicted 7 ps would otherwise stretch the axes over eight empty decades.
    F.forEach(function (f) { [f.measured_s, f.predicted_s, f.free_s].forEach(function (v) { if (v >= 1e-9) vals.push(v); }); });
    var lo = Math.pow(10, Math.floor(Math.log10(vals.length ? Math.min.apply(null, vals) : 1e-6)));
    var hi = Math.pow(10, Math.ceil(Math.log10(vals.length ? Math.max.apply(null, vals) : 1e-3)));
    if (hi / lo < 100) lo = hi / 100;
    var W = 580, H = 470, L = 84, B = 46, T = 14, Rm = 30;
    var sx = function (v) { return L + (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) * (W - L - Rm); };
    var sy = function (v) { return H - B - (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) * (H - B - T); };
    var o = ['<svg id="scatter" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '">'];
    o.push('<polygon points="' + [[lo, lo * 2], [hi / 2, hi], [hi, hi], [hi, hi / 2], [lo * 2, lo], [lo, lo]].map(function (p) {
      return sx(p[0]) + ',' + sy(p[1]);
    }).join(' ') + '" fill="#eef1f5"/>');
    o.push('<g class="axis">');
    // Decades as exact powers of ten (repeated products drift: 0.000999 printed as
    // "1.00e+3 µs"), labelled every other one when there are more than six.
    var k0 = Math.round(Math.log10(lo)), k1 = Math.round(Math.log10(hi)), every = k1 - k0 > 6 ? 2 : 1;
    var tick = function (d) { var t = fmtS(d).split(' '); return parseFloat(t[0]) + ' ' + t[1]; };
    for (var k = k0; k <= k1; k++) {
      var d = Math.pow(10, k);
      o.push('<line x1="' + sx(d) + '" x2="' + sx(d) + '" y1="' + T + '" y2="' + (H - B) + '"/>');
      o.push('<line x1="' + L + '" x2="' + (W - Rm) + '" y1="' + sy(d) + '" y2="' + sy(d) + '"/>');
      if ((k - k0) % every) continue;
      o.push('<text x="' + sx(d) + '" y="' + (H - B + 16) + '" text-anchor="middle">' + esc(tick(d)) + '</text>');
      o.push('<text x="' + (L - 6) + '" y="' + (sy(d) + 4) + '" text-anchor="end">' + esc(tick(d)) + '</text>');
    }
    o.push('</g>');
    o.push('<line x1="' + sx(lo) + '" y1="' + sy(lo) + '" x2="' + sx(hi) + '" y2="' + sy(hi) + '" stroke="#8a93a3" stroke-dasharray="4 3"/>');
    o.push('<text x="' + ((L + W - Rm) / 2) + '" y="' + (H - 8) + '" text-anchor="middle">measured (mean per call)</text>');
    o.push('<text transform="translate(14,' + ((T + H - B) / 2) + ') rotate(-90)" text-anchor="middle">predicted (mean per call)</text>');
    F.forEach(function (f) {
      var c = color(f.call), x0 = sx(f.measured_s);
      var tip = esc(f.call + ' ' + f.size_class + ' (' + f.count + ' calls): measured ' + fmtS(f.measured_s) +
        ', predicted ' + fmtS(f.predicted_s) + ', contention-free ' + fmtS(f.free_s));
      o.push('<g class="point" data-call="' + esc(f.call) + '">');
      o.push('<line x1="' + x0 + '" x2="' + x0 + '" y1="' + sy(f.free_s) + '" y2="' + sy(f.predicted_s) + '" stroke="' + c + '" stroke-opacity=".5"/>');
      var yf = sy(f.free_s);
      o.push('<path d="M' + x0 + ',' + (yf - 5) + 'L' + (x0 + 5) + ',' + yf + 'L' + x0 + ',' + (yf + 5) + 'L' + (x0 - 5) + ',' + yf +
        'Z" fill="#fff" stroke="' + c + '" stroke-width="1.5"><title>' + tip + '</title></path>');
      o.push('<circle cx="' + x0 + '" cy="' + sy(f.predicted_s) + '" r="4.5" fill="' + c + '" fill-opacity=".85"><title>' + tip + '</title></circle>');
      o.push('</g>');
    });
    o.push('</svg>');
    var t = '<table id="families"><tr><th>call</th><th>size</th><th class="num">calls</th><th class="num">measured</th>' +
      '<th class="num">predicted</th><th class="num">E</th><th class="num">contention-free</th><th class="num">E</th></tr>' +
      F.map(function (f) {
        return '<tr class="family" data-call="' + esc(f.call) + '"><td><span class="sw" style="display:inline-block;width:9px;height:9px;border-radius:50%;background:' +
          color(f.call) + ';margin-right:5px"></span>' + esc(f.call) + '</td><td>' + esc(f.size_class) + '</td><td class="num">' +
          esc(f.count) + '</td><td class="num">' + fmtS(f.measured_s) + '</td><td class="num">' + fmtS(f.predicted_s) +
          '</td><td class="num">' + fmtPct(rel(f.predicted_s, f.measured_s)) + '</td><td class="num">' + fmtS(f.free_s) +
          '</td><td class="num">' + fmtPct(rel(f.free_s, f.measured_s)) + '</td></tr>';
      }).join('') + '</table>';
    add(s, '<div class="cols"><div>' + o.join('') + '</div><div>' + t + '</div></div>');
  });

  // E_rel by size class.
  guard('erel', 'Error by size', function () {
    var s = section('erel', 'Prediction error by message size',
      'E_rel = (predicted − measured) / measured per call (summary.json\'s e_rel_percent): median, and in ' +
      'brackets the 90th percentile of |E_rel|, with the number of calls. Green: median |E_rel| below 25 %, ' +
      'yellow below 100 %, red above.');
    var E = D.e_rel || {};
    var calls = Object.keys(E);
    if (!calls.length) { add(s, '<p class="note">No predicted calls.</p>'); return; }
    var used = SIZES.filter(function (c) { return calls.some(function (k) { return E[k][c]; }); });
    var t = '<table id="erel-table"><tr><th>call</th>' + used.map(function (c) { return '<th class="num">' + esc(c) + '</th>'; }).join('') + '</tr>';
    calls.forEach(function (k) {
      t += '<tr class="erel-row" data-call="' + esc(k) + '"><td>' + esc(k) + '</td>';
      used.forEach(function (c) {
        var e = E[k][c];
        if (!e || !e.count) { t += '<td></td>'; return; }
        var cls = e.median_abs < 25 ? 'good' : e.median_abs < 100 ? 'fair' : 'poor';
        t += '<td class="num ' + cls + '">' + fmtPct(e.median) + ' <span class="note">(' + num(e.p90_abs).toFixed(0) +
          ' %) n=' + esc(e.count) + '</span></td>';
      });
      t += '</tr>';
    });
    add(s, t + '</table>');
  });

  // Hotspots.
  guard('hotspots', 'Hotspots', function () {
    var h = D.hotspots || {};
    var s = section('hotspots', 'Contention hotspots and who made others wait',
      'From hotspots.json. Excess = (penalty − 1) × bytes moved: what bandwidth sharing added under the ' +
      esc(h.model || R.model) + ' model. Cause: an <i>outgoing conflict</i> (the source sends several messages at once), ' +
      'an <i>incoming conflict</i> (the destination receives several), or both; without either, <i>opposite messages</i> ' +
      '(a message runs the other way between the same two nodes: the profile\'s reverse-flow factor) or a <i>destination sending on</i> ' +
      '(to a third node: the through-flow factor).');
    var cause = function (c) {
      return esc({ outgoing_conflict: 'outgoing conflict', incoming_conflict: 'incoming conflict',
        both: 'outgoing and incoming', opposite: 'opposite messages', through: 'destination sending on',
        none: 'no conflict' }[c] || String(c));
    };
    var iv = (h.intervals || []).filter(function (i) { return i.excess_bytes > 0; });
    var html = '<div class="cols"><div>';
    if (!iv.length) {
      html += '<p class="note" id="no-contention">No bandwidth sharing between inter-node messages was predicted.</p>';
    } else {
      html += '<h3>Intervals</h3><table id="hot-intervals"><tr><th class="num">from</th><th class="num">to</th><th>what</th><th class="num">arcs</th>' +
        '<th class="num">max penalty</th><th class="num">excess</th><th>cause</th></tr>' + iv.map(function (i) {
        return '<tr class="hotspot"><td class="num">' + fmtS(i.start_s) + '</td><td class="num">' + fmtS(i.end_s) + '</td><td>' +
          (i.operation ? esc(i.operation) : 'messages') + '</td><td class="num">' +
          esc(i.arcs) + '</td><td class="num">' + num(i.max_penalty).toFixed(2) + '</td><td class="num">' + fmtB(i.excess_bytes) +
          '</td><td>' + cause(i.cause) + '</td></tr>';
      }).join('') + '</table>';
      var np = (h.node_pairs || []).filter(function (p) { return p.excess_bytes > 0; });
      html += '<h3>Node pairs</h3><table id="hot-pairs"><tr><th>source → destination</th><th class="num">excess</th><th>cause</th></tr>' +
        np.map(function (p) {
          return '<tr class="hotspot"><td>' + esc(p.src) + ' → ' + esc(p.dst) + '</td><td class="num">' + fmtB(p.excess_bytes) +
            '</td><td>' + cause(p.cause) + '</td></tr>';
        }).join('') + '</table>';
      var nn = (h.nodes || []).filter(function (p) { return p.excess_bytes > 0; });
      html += '<h3>Nodes</h3><table id="hot-nodes"><tr><th>node</th><th class="num">excess</th><th>cause</th></tr>' +
        nn.map(function (p) {
          return '<tr class="hotspot"><td>' + esc(p.node) + '</td><td class="num">' + fmtB(p.excess_bytes) + '</td><td>' + cause(p.cause) + '</td></tr>';
        }).join('') + '</table>';
    }
    html += '</div><div>';
    var rl = h.ranks || [];
    html += '<h3>Ranks that lost most time to contention (predicted)</h3>';
    html += rl.length ? '<table id="hot-ranks"><tr><th>rank</th><th>node</th><th class="num">lost</th></tr>' + rl.map(function (r) {
      return '<tr><td>' + esc(r.rank) + '</td><td>' + esc(r.node) + '</td><td class="num">' + fmtS(r.lost_s) + '</td></tr>';
    }).join('') + '</table>' : '<p class="note">None.</p>';
    var wf = h.waited_for || [];
    html += '<h3>Ranks that made others wait (measured)</h3>';
    html += wf.length ? '<table id="waited-for"><tr><th>rank</th><th class="num">others waited</th><th>mostly</th></tr>' + wf.map(function (w) {
      return '<tr class="waited"><td>' + esc(w.rank) + '</td><td class="num">' + fmtS(w.caused_s) + '</td><td>' + esc(w.kind) + '</td></tr>';
    }).join('') + '</table>' : '<p class="note">No rank waited for another.</p>';
    var W8 = D.waits || {}, mk = W8.measured_by_kind || {}, pk = W8.predicted_by_kind || {};
    var kinds = Object.keys(mk).concat(Object.keys(pk).filter(function (k) { return !(k in mk); }));
    if (kinds.length) {
      html += '<h3>Waits by kind</h3><table id="wait-kinds"><tr><th>kind</th><th class="num">measured</th><th class="num">predicted</th></tr>' +
        kinds.map(function (k) {
          return '<tr><td>' + esc(k) + '</td><td class="num">' + fmtS(mk[k] || 0) + '</td><td class="num">' + fmtS(pk[k] || 0) + '</td></tr>';
        }).join('') + '</table>';
    }
    add(s, html + '</div></div>');
  });

  // Helpers used above (function declarations are hoisted).
  function legend(items, note) {
    return '<div class="legend">' + items.map(function (i) {
      return '<span class="sw" style="background:' + i[1] + '"></span>' + esc(i[0]);
    }).join('') + (note ? '<span style="margin-left:18px">' + esc(note) + '</span>' : '') + '</div>';
  }
  function ticks(a, b, n) {
    var span = b - a;
    if (!(span > 0)) return [a];
    var base = Math.pow(10, Math.floor(Math.log10(span / n))), step = base;
    [1, 2, 5, 10].some(function (m) { step = base * m; return span / step <= n; });
    var out = [];
    for (var t = a; t <= b + step * 1e-9; t += step) out.push(t);
    return out;
  }
  function heat(id, nodes, m, fmt, rgb) {
    m = m || [];
    var max = 0;
    m.forEach(function (row) { (row || []).forEach(function (v) { max = Math.max(max, num(v)); }); });
    var dense = nodes.length > 24;
    var t = '<table class="heat' + (dense ? ' dense' : '') + '" id="' + id + '"><tr><th>from \\ to</th>' +
      nodes.map(function (n) { return '<th>' + (dense ? '' : esc(n)) + '</th>'; }).join('') + '</tr>';
    nodes.forEach(function (n, i) {
      t += '<tr><th class="src">' + esc(n) + '</th>';
      nodes.forEach(function (_, j) {
        var v = num((m[i] || [])[j]);
        var a = max > 0 ? Math.sqrt(v / max) : 0;
        var dark = a > 0.55;
        t += '<td class="cell" data-v="' + v + '" style="background:rgba(' + rgb + ',' + a.toFixed(3) + ');' +
          (dark ? 'color:#fff' : '') + '" title="' + esc(nodes[i] + ' → ' + nodes[j] + ': ' + fmt(v)) + '">' +
          (v > 0 ? esc(fmt(v)) : '·') + '</td>';
      });
      t += '</tr>';
    });
    return t + '</table>';
  }

  var foot = document.createElement('footer');
  foot.innerHTML = 'pmpi-predict · this page is self-contained: network requests made: <span id="net-requests">?</span>';
  document.body.appendChild(foot);
  function count() {
    document.getElementById('net-requests').textContent =
      String(performance.getEntriesByType('resource').length);
  }
  count();
  window.addEventListener('load', count);
  document.body.setAttribute('data-rendered', '1');
})();
