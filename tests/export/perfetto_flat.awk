# perfetto_flat.awk - `protoc --decode` text of a Perfetto export (with
# perfetto_min.proto) as flat lines, one per record, with every interned
# name and stack resolved, for export_check.sh (json_flat.jq writes the
# same lines from a JSON export):
#
#   PID|TYPE|TS|TRACK|TKIND|NAME|CAT|VALUE|STACK
#
# TYPE: D (a track described: NAME its name; VALUE a thread's tid), B, E, I
# (slice begin, end, instant), C (a counter's VALUE), S, F (a flow's start
# and end: VALUE its id). TRACK is the track's (last) name, TKIND process, thread,
# regions (a child of a thread), counter or track. STACK: the function
# names, leaf first, joined by ";". Broken wire rules (an iid used before
# the sequence defines it, a sequence whose first packet does not clear
# its incremental state, a time on a clock no snapshot of the sequence
# defines, more extra counter values than counter tracks) print "ERR|what".
# SEQ_NEEDS_INCREMENTAL_STATE is not asked for: Perfetto's reader uses it
# only to drop packets while a sequence's state is lost, which a file
# written whole never has.
#
# Times are resolved as Perfetto's reader does: a packet's clock is its
# timestamp_clock_id, else its sequence's default (trace_packet_defaults);
# a sequence clock (64 and up) marked incremental in the sequence's clock
# snapshot adds its timestamp, times the clock's unit, to the clock's last
# time; the boot clock (6), or none, is the time itself. A track event's
# extra counter values are counter values at its time, on the tracks its
# extra_counter_track_uuids, else its sequence's defaults, name in order.
function unq(s) { sub(/^"/, "", s); sub(/"$/, "", s); gsub(/\\"/, "\"", s); gsub(/\\\\/, "\\", s); return s }
function err(what) { print "ERR|" what " (packet " npk ")" }
function reset() {
    ts = ""; seq = ""; flags = 0; te = 0; td = 0; pclk = ""; nxv = 0; nxu = 0; nclk = 0
    split("", xv); split("", xu)
    etype = ""; track = ""; ncat = 0; name = ""; name_iid = ""; cv = ""; nfl = 0; ntfl = 0; cs = ""
    uuid = ""; tname = ""; parent = ""; kind = ""; pid = ""; tid = ""
    split("", cats); split("", fl); split("", tfl)
}
function stackof(s, iid,    n, a, i, out) {
    if (!((s, iid) in cstack)) { err("callstack " iid " undefined"); return "?" }
    n = split(cstack[s, iid], a, " ")
    out = ""
    for (i = n; i >= 1; i--) {
        if (!((s, a[i]) in ffunc)) { err("frame " a[i] " undefined"); continue }
        if (!((s, ffunc[s, a[i]]) in fname)) err("function name " ffunc[s, a[i]] " undefined")
        out = out (out == "" ? "" : ";") fname[s, ffunc[s, a[i]]]
    }
    return out
}
# Records are kept and written at the end, each under its track's last
# name: the export renames a thread's track once it knows the function the
# thread's runtime starts it in calls (as the JSON export's one name does).
function line(type, value, stack) {
    nb++; bt[nb] = track; bl[nb] = type "|" ts; br[nb] = tkd[track] "|" name "|" catstr "|" value "|" stack
}
END { for (i = 1; i <= nb; i++) print tpid[bt[i]] "|" bl[i] "|" tnm[bt[i]] "|" br[i] }
function packet_end(    i, c, st, cid, n, u) {
    npk++
    if (!(seq in seen)) {
        seen[seq] = 1
        if (flags % 2 != 1) err("sequence " seq " does not begin by clearing its incremental state")
    }
    for (i = 1; i <= nclk; i++) {
        cunit[seq, pc_id[i]] = pc_unit[i]; cinc[seq, pc_id[i]] = pc_inc[i]
        clast[seq, pc_id[i]] = pc_ts[i] * pc_unit[i]
    }
    if (ts != "") {
        cid = pclk != "" ? pclk : (seq in dclk) ? dclk[seq] : ""
        if (cid + 0 >= 64) {
            if (!((seq, cid) in cunit)) err("clock " cid " has no snapshot on sequence " seq)
            else if (cinc[seq, cid]) {
                clast[seq, cid] += ts * cunit[seq, cid]; ts = clast[seq, cid]
            } else ts = ts * cunit[seq, cid]
        } else if (cid != "" && cid != 6) err("time on clock " cid)
    }
    if (td) {
        if (kind == "process") { tpid[uuid] = pid; tkd[uuid] = "process"; tnm[uuid] = tname }
        else if (kind == "thread") { tpid[uuid] = pid; tkd[uuid] = "thread"; tnm[uuid] = tname }
        else {
            tpid[uuid] = tpid[parent]; tnm[uuid] = tname
            tkd[uuid] = kind == "counter" ? "counter" : tkd[parent] == "thread" ? "regions" : "track"
        }
        print tpid[uuid] "|D||" tnm[uuid] "|" tkd[uuid] "|" tnm[uuid] "||" tid "|"
    }
    if (!te) return
    if (!(track in tnm)) err("track " track " used before it is described")
    if (name_iid != "") {
        if (!((seq, name_iid) in ename)) err("event name " name_iid " undefined")
        name = ename[seq, name_iid]
    }
    catstr = ""
    for (i = 1; i <= ncat; i++) {
        c = cats[i]
        if (c ~ /^iid:/) {
            c = substr(c, 5)
            if (!((seq, c) in ecat)) err("category " c " undefined")
            c = ecat[seq, c]
        }
        catstr = catstr (catstr == "" ? "" : ",") c
    }
    st = cs != "" ? stackof(seq, cs) : ""
    if (etype == "TYPE_SLICE_BEGIN") line("B", "", st)
    else if (etype == "TYPE_SLICE_END") line("E", "", st)
    else if (etype == "TYPE_INSTANT") line("I", "", st)
    else if (etype == "TYPE_COUNTER") line("C", cv, st)
    n = nxu ? nxu : (seq in dxn) ? dxn[seq] : 0
    if (nxv > n) err(nxv " extra counter values for " n " counter tracks")
    for (i = 1; i <= nxv && i <= n; i++) {
        u = nxu ? xu[i] : dxu[seq, i]
        track = u; name = ""; catstr = ""
        if (!(track in tnm)) err("track " track " used before it is described")
        line("C", xv[i], "")
    }
    for (i = 1; i <= nfl; i++) { name = ""; catstr = ""; line("S", fl[i], "") }
    for (i = 1; i <= ntfl; i++) { name = ""; catstr = ""; line("F", tfl[i], "") }
}
BEGIN { depth = 0; npk = 0 }
/^packet {$/ { reset(); depth = 1; path[1] = "packet"; next }
/{$/ {
    depth++; path[depth] = $1
    if ($1 == "track_event") te = 1
    else if ($1 == "track_descriptor") td = 1
    else if ($1 == "process" || $1 == "thread") kind = $1
    else if ($1 == "counter") kind = "counter"
    ent_iid = ""; ent_val = ""; ent_fn = ""; ent_ids = ""
    clk_id = ""; clk_ts = 0; clk_inc = ""; clk_unit = ""
    if ($1 == "track_event_defaults") dxn[seq] = 0
    next
}
/^ *}$/ {
    # An interned entry ends: into the sequence's tables.
    p = path[depth]
    if (p == "clocks") {  # applied at the packet's end, its sequence known
        nclk++; pc_id[nclk] = clk_id; pc_ts[nclk] = clk_ts; pc_inc[nclk] = clk_inc == "true"
        pc_unit[nclk] = clk_unit != "" ? clk_unit : 1
    }
    if (path[depth - 1] == "interned_data") {
        if (p == "event_names") ename[seq, ent_iid] = ent_val
        else if (p == "event_categories") ecat[seq, ent_iid] = ent_val
        else if (p == "function_names") fname[seq, ent_iid] = ent_val
        else if (p == "frames") ffunc[seq, ent_iid] = ent_fn
        else if (p == "callstacks") cstack[seq, ent_iid] = ent_ids
    }
    depth--
    if (depth == 0) packet_end()
    next
}
/counter {}/ { kind = "counter"; next }
{
    k = $1; sub(/:$/, "", k); v = $0; sub(/^[^:]*: /, "", v)
    p = path[depth]
    if (p == "packet") {
        if (k == "timestamp") ts = v
        else if (k == "trusted_packet_sequence_id") seq = v
        else if (k == "sequence_flags") flags = v
        else if (k == "timestamp_clock_id") pclk = v
    } else if (p == "trace_packet_defaults") {
        if (k == "timestamp_clock_id") dclk[seq] = v
    } else if (p == "track_event_defaults") {
        if (k == "extra_counter_track_uuids") dxu[seq, ++dxn[seq]] = v
    } else if (p == "clocks") {
        if (k == "clock_id") clk_id = v
        else if (k == "timestamp") clk_ts = v
        else if (k == "is_incremental") clk_inc = v
        else if (k == "unit_multiplier_ns") clk_unit = v
    } else if (p == "track_event") {
        if (k == "type") etype = v
        else if (k == "track_uuid") track = v
        else if (k == "categories") cats[++ncat] = unq(v)
        else if (k == "category_iids") cats[++ncat] = "iid:" v
        else if (k == "name") name = unq(v)
        else if (k == "name_iid") name_iid = v
        else if (k == "counter_value") cv = v
        else if (k == "flow_ids" || k == "flow_ids_old") fl[++nfl] = v
        else if (k == "terminating_flow_ids" || k == "terminating_flow_ids_old") tfl[++ntfl] = v
        else if (k == "extra_counter_values") xv[++nxv] = v
        else if (k == "extra_counter_track_uuids") xu[++nxu] = v
        else if (k == "callstack_iid") cs = v
    } else if (p == "track_descriptor") {
        if (k == "uuid") uuid = v
        else if (k == "name") tname = unq(v)
        else if (k == "parent_uuid") parent = v
    } else if (p == "process" || p == "thread") {
        if (k == "pid") pid = v
        else if (k == "tid") tid = v
        else if (k == "process_name" || k == "thread_name") tname = unq(v)
    } else if (path[depth - 1] == "interned_data") {
        if (k == "iid") ent_iid = v
        else if (k == "name" || k == "str") ent_val = unq(v)
        else if (k == "function_name_id") ent_fn = v
        else if (k == "frame_ids") ent_ids = ent_ids (ent_ids == "" ? "" : " ") v
    }
}
