# json_flat.jq - a JSON export (Chrome's Trace Event Format) as the flat
# lines perfetto_flat.awk writes, for export_check.sh (see there):
#
#   PID|TYPE|TS|TRACK|TKIND|NAME|CAT|VALUE|STACK
#
# Threads are named by their "M" events; a tid's kind follows the layout
# docs/analyse.md gives (goroutine g: tid g; its regions 1000000000 + g;
# Ps, GC, stop-the-world from 2000000000). Tasks are their async events'
# tracks, named by the events (kind track, as in Perfetto's file), their
# logs "n" events with args category and message. A counter event is a
# line per series ("NAME SERIES"). Times in nanoseconds.
def ns: (.ts * 1000 | round | tostring);
def tkind: if .tid < 1000000000 then "thread" elif .tid < 2000000000 then "regions" else "track" end;
# jq 1.6 joins by a reduce over the array; one string interpolation takes
# half the time, and this runs once per record (hundreds of thousands).
def line:
  if length == 9 then "\(.[0])|\(.[1])|\(.[2])|\(.[3])|\(.[4])|\(.[5])|\(.[6])|\(.[7])|\(.[8])"
  else map(tostring) | join("|") end;

.traceEvents as $ev
| ([$ev[] | select(.ph == "M" and .name == "thread_name") | {key: "\(.pid) \(.tid)", value: .args.name}]
   | from_entries) as $tn
| ([$ev[] | select(.ph == "b" or .ph == "e" or .ph == "n") | [.pid, "D", "", .name, "track", .name, "", "", ""] | line]
   | unique[]),
  ($ev[]
   # The most frequent kinds first: counters, then slices and instants.
   | if .ph == "C" then
       (. as $c | .args | to_entries[] | [$c.pid, "C", ($c | ns), "\($c.name) \(.key)", "counter", "", "", .value, ""])
     elif .ph == "B" or .ph == "E" or .ph == "i" then
       [.pid, (if .ph == "i" then "I" else .ph end), ns, $tn["\(.pid) \(.tid)"], tkind, .name // "", .cat // "", "",
        ((.args.stack // []) | join(";"))]
     elif .ph == "M" and .name == "process_name" then [.pid, "D", "", .args.name, "process", .args.name, "", "", ""]
     elif .ph == "M" and .name == "thread_name" then [.pid, "D", "", .args.name, tkind, .args.name, "", .tid, ""]
     elif .ph == "b" then [.pid, "B", ns, .name, "track", .args.type, .cat, "", ""]
     elif .ph == "e" then [.pid, "E", ns, .name, "track", "", "", "", ""]
     elif .ph == "n" then [.pid, "I", ns, .name, "track", .args.message, .args.category, "", ""]
     elif .ph == "s" or .ph == "f" then [.pid, (.ph | ascii_upcase), ns, $tn["\(.pid) \(.tid)"], tkind, "", "", .id, ""]
     else ["?", "unknown event", tostring] end
   | line)
