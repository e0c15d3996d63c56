# The model and printing half of fake_nccl_tests.sh (which passes the parsed options with -v).
# part=preamble prints the preamble and header only; part=all the whole run.

function parsesize(s,    unit, v) {
  unit = substr(s, length(s))
  v = s + 0
  if (unit == "K" || unit == "k") v *= 1024
  if (unit == "M" || unit == "m") v *= 1048576
  if (unit == "G" || unit == "g") v *= 1073741824
  return v
}

# nccl-tests' number format: 2 decimals, fewer when the width is exceeded, then an exponent.
function num(v, w,    s) {
  s = sprintf("%" w ".2f", v); if (length(s) <= w) return s
  s = sprintf("%" w ".1f", v); if (length(s) <= w) return s
  s = sprintf("%" w ".0f", v); if (length(s) <= w) return s
  return sprintf("%" w (w >= 7 ? ".1e" : ".0e"), v)
}

# Park-Miller generator: the same sequence under every awk.
function rnd() {
  seed = (seed * 16807) % 2147483647
  return seed / 2147483647
}

function hash(s,    i, h, c) {
  h = 5381
  for (i = 1; i <= length(s); i++) {
    c = index(" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~", substr(s, i, 1))
    h = (h * 33 + c) % 2147483647
  }
  return h == 0 ? 1 : h
}

function lower(s) { return tolower(s) }

# Does the comma list (NCCL_ALGO / NCCL_PROTO, maybe empty = all) allow `name`?
function allows(list, name,    n, parts, i) {
  if (list == "") return 1
  n = split(lower(list), parts, ",")
  for (i = 1; i <= n; i++) if (parts[i] == lower(name)) return 1
  return 0
}

function jsonstr(s) {
  gsub(/\\/, "\\\\", s)
  gsub(/"/, "\\\"", s)
  return "\"" s "\""
}

# Time in µs of one call of `bytes` with algorithm a and protocol p; skew != 0 is the model
# the "default" choice uses (it underrates LL128).
function model(a, p, bytes, skew,    lat, eff, bw, af) {
  if (p == "LL") { lat = 4; eff = 0.30 }
  else if (p == "LL128") { lat = 6.5; eff = skew ? 0.55 : 0.80 }
  else { lat = 11; eff = 1.0 }
  bw = inter ? 12 : 18
  if (a == "Ring") { lat += (nranks - 1) * (inter ? 1.2 : 0.35); af = 1.0 }
  else { lat += 2 * log(nranks) / log(2) * (inter ? 1.5 : 0.5) + 6; af = inter ? 0.9 : 0.55 }
  lat += 0.15 * channels
  bw *= channelScale
  return lat + bytes * busfactor / (bw * eff * af * 1000)
}

BEGIN {
  coll = prog
  sub(/_perf$/, "", coll)
  nranks = nodes * tasks * ngpus * nthreads
  inter = nodes > 1
  if (coll == "all_reduce") { busfactor = 2 * (nranks - 1) / nranks; algos = "Ring,Tree"; fname = "AllReduce"; redop = "sum" }
  else if (coll == "all_gather") { busfactor = (nranks - 1) / nranks; algos = "Ring"; fname = "AllGather"; redop = "none" }
  else if (coll == "reduce_scatter") { busfactor = (nranks - 1) / nranks; algos = "Ring"; fname = "ReduceScatter"; redop = "sum" }
  else { busfactor = 1; algos = "Ring"; fname = coll == "broadcast" ? "Broadcast" : "Reduce"; redop = coll == "broadcast" ? "none" : "sum" }
  root = (coll == "broadcast" || coll == "reduce") ? 0 : -1

  algoEnv = ENVIRON["NCCL_ALGO"]; protoEnv = ENVIRON["NCCL_PROTO"]
  minch = ENVIRON["NCCL_MIN_NCHANNELS"] + 0; maxch = ENVIRON["NCCL_MAX_NCHANNELS"] + 0
  channels = 8
  if (maxch > 0) channels = maxch
  if (minch > 0 && (maxch == 0 || minch > channels)) channels = minch
  if (maxch > 0 && channels > maxch) channels = maxch
  channelScale = (channels < 8 ? channels / 8 : 1 + 0.03 * (channels - 8) / 8)
  seed = hash(ENVIRON["NCCL_PILOT_SWEEP_RUN"] "|" ENVIRON["FAKE_NCCL_TESTS_SEED"] "|" prog "|" algoEnv "|" protoEnv "|" minch "|" maxch)
  debug = toupper(ENVIRON["NCCL_DEBUG"]) == "INFO"
  tuning = debug && index(toupper(ENVIRON["NCCL_DEBUG_SUBSYS"]), "TUNING") > 0
  pid = 4242

  # --- preamble, as nccl-tests prints it
  printf "# nccl-tests version 2.17.9 nccl-headers=22902 nccl-library=22902\n"
  printf "# Collective test starting: %s\n", prog
  if (factor > 1) { step = factor; stepkind = "factor" } else { step = stepbytes; stepkind = "bytes" }
  printf "# nThread %d nGpus %d minBytes %.0f maxBytes %.0f step: %d(%s) warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0\n", nthreads, ngpus, parsesize(minbytes), parsesize(maxbytes), step, stepkind, warmup, iters, check
  printf "#\n# Using devices\n"
  for (r = 0; r < nranks; r++) {
    node = int(r / (tasks * ngpus * nthreads))
    hostname = nodes > 1 ? "fake-node-" node : host
    printf "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:%02x:00] Fake GPU\n", r, pid + int(r / (ngpus * nthreads)), hostname, r % (tasks * ngpus * nthreads), 16 + r
  }
  if (debug) {
    printf "NCCL version 2.29.2+cuda13.1\n"
    for (v = 0; v < 4; v++) {
      name = v == 0 ? "NCCL_ALGO" : v == 1 ? "NCCL_PROTO" : v == 2 ? "NCCL_MIN_NCHANNELS" : "NCCL_MAX_NCHANNELS"
      if (ENVIRON[name] != "") printf "%s:%d:%d [0] NCCL INFO %s set by environment to %s%s\n", host, pid, pid, name, ENVIRON[name], (v >= 2 ? "." : "")
    }
  }
  if (fail) {
    printf "%s: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '\n", host
    printf " .. %s pid %d: Test failure common.cu:1116\n", host, pid
    exit 1
  }

  # Which (algorithm, protocol) pairs the forcing leaves; none is NCCL's "invalid usage".
  nchoices = 0
  na = split(algos, A, ",")
  for (i = 1; i <= na; i++) {
    if (!allows(algoEnv, A[i])) continue
    for (j = 0; j < 3; j++) {
      p = j == 0 ? "LL" : j == 1 ? "LL128" : "Simple"
      if (allows(protoEnv, p)) { nchoices++; CA[nchoices] = A[i]; CP[nchoices] = p }
    }
  }
  if (nchoices == 0) {
    printf "%s:%d:%d [0] enqueue.cc:1722 NCCL WARN Error : no algorithm/protocol available for function %s with datatype ncclFloat32. NCCL_ALGO was set to %s and NCCL_PROTO was set to %s.\n", host, pid, pid, fname, algoEnv, protoEnv
    printf "%s: Test NCCL failure common.cu:392 'invalid usage (run with NCCL_DEBUG=WARN for details) / no algorithm/protocol available'\n", host
    exit 1
  }

  printf "#\n"
  printf "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", ""
  printf "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"
  printf "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""
  if (part == "preamble") { fflush(); exit 0 }

  # --- rows
  lo = parsesize(minbytes); hi = parsesize(maxbytes)
  nrows = 0; bwsum = 0; wrongsum = 0
  for (s = lo; s <= hi; s = factor > 1 ? s * factor : s + parsesize(stepbytes)) {
    if (coll == "all_gather" || coll == "reduce_scatter") {
      count = int(s / 4 / nranks); bytes = count * 4 * nranks; callbytes = count * 4
    } else {
      count = int(s / 4); bytes = count * 4; callbytes = bytes
    }
    best = 0
    for (c = 1; c <= nchoices; c++) {
      t = model(CA[c], CP[c], bytes, 1)
      if (best == 0 || t < bestt) { best = c; bestt = t }
    }
    if (tuning) printf "%s:%d:%d [0] NCCL INFO %s: %.0f Bytes -> Algo %s proto %s channel{Lo..Hi}={0..%d}\n", host, pid, pid, fname, callbytes, CA[best], CP[best], channels - 1
    noise = bytes < 65536 ? 0.04 : 0.01
    t1 = model(CA[best], CP[best], bytes, 0) * (1 + noise * (2 * rnd() - 1))
    t2 = model(CA[best], CP[best], bytes, 0) * (1 + noise * (2 * rnd() - 1))
    w = (ENVIRON["FAKE_NCCL_TESTS_WRONG"] == "1" && s * (factor > 1 ? factor : 1) > hi) ? 3 : 0
    wrongsum += 2 * w
    nrows++
    SIZE[nrows] = bytes; COUNT[nrows] = count
    T1[nrows] = t1; T2[nrows] = t2; W[nrows] = w
    alg1 = bytes / t1 / 1000; alg2 = bytes / t2 / 1000
    bwsum += (alg1 + alg2) * busfactor
    printf "%12.0f  %12.0f  %8s  %6s  %6d", bytes, count, "float", redop, root
    printf "  %7s  %6s  %6s  %6g", num(t1, 7), num(alg1, 6), num(alg1 * busfactor, 6), check ? w : 0
    printf "  %7s  %6s  %6s  %6g\n", num(t2, 7), num(alg2, 6), num(alg2 * busfactor, 6), check ? w : 0
  }
  printf "# %-20s : %d %s\n", "Out of bounds values", wrongsum, wrongsum ? "FAILED" : "OK"
  printf "# %-20s : %g \n", "Avg bus bandwidth", nrows ? bwsum / (2 * nrows) : 0
  printf "#\n# Collective test concluded: %s\n#\n", prog

  # --- -J: written by "rank 0"; an existing path gets .1, .2, ... as nccl-tests does
  if (json != "") {
    path = json
    for (k = 1; (getline junk < path) >= 0; k++) { close(path); path = json "." k }
    close(path)
    printf "{\"version\": 1, \"start_time\": \"2026-01-01 00:00:00\", \"args\": [%s], \"env\": [", jsonstr(prog) > path
    first = 1
    for (name in ENVIRON) {
      if (name !~ /^NCCL_/ || ENVIRON[name] == "") continue  # awk creates what it reads
      printf "%s%s", first ? "" : ", ", jsonstr(name "=" ENVIRON[name]) > path
      first = 0
    }
    printf "], \"nccl_version\": 22902, \"config\": {\"nthreads\": %d, \"ngpus\": %d, \"minimum_bytes\": %.0f, \"maximum_bytes\": %.0f, \"step_factor\": %d, \"warmup_iters\": %d, \"iterations\": %d, \"aggregated_iterations\": 1, \"validation\": %d, \"graph\": 0, \"devices\": [", nthreads, ngpus, lo, hi, factor, warmup, iters, check > path
    for (r = 0; r < nranks; r += ngpus * nthreads) {
      node = int(r / (tasks * ngpus * nthreads))
      printf "%s{\"rank\": %d, \"group\": 0, \"pid\": %d, \"hostname\": %s, \"device\": 0, \"device_hex\": \"0000:10:00\", \"device_info\": \"Fake GPU\"}", r ? ", " : "", r, pid, jsonstr(nodes > 1 ? "fake-node-" node : host) > path
    }
    printf "]}, \"results\": [" > path
    for (i = 1; i <= nrows; i++) {
      printf "%s{\"size\": %.0f, \"count\": %.0f, \"type\": \"float\", \"redop\": \"%s\", \"root\": \"%6d\", ", (i > 1 ? ", " : ""), SIZE[i], COUNT[i], redop, root > path
      printf "\"out_of_place\": {\"time\": %f, \"alg_bw\": %f, \"bus_bw\": %f, \"nwrong\": %s}, ", T1[i], SIZE[i] / T1[i] / 1000, SIZE[i] / T1[i] / 1000 * busfactor, check ? W[i] : "null" > path
      printf "\"in_place\": {\"time\": %f, \"alg_bw\": %f, \"bus_bw\": %f, \"nwrong\": %s}, \"actual_iterations\": %d, \"experiment_name\": \"\"}", T2[i], SIZE[i] / T2[i] / 1000, SIZE[i] / T2[i] / 1000 * busfactor, check ? W[i] : "null", iters > path
    }
    printf "], \"out_of_bounds\": {\"count\": %d, \"okay\": %s}, \"average_bus_bandwidth\": {\"bandwidth\": %f, \"okay\": \"unchecked\"}, \"errors\": [], \"end_time\": \"2026-01-01 00:00:01\"}\n", wrongsum, wrongsum ? "false" : "true", nrows ? bwsum / (2 * nrows) : 0 > path
    close(path)
  }
}
