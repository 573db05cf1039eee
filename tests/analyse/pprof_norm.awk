# pprof_norm.awk: `go tool pprof -raw` output to one line per sample,
#   COUNT DELAY | ADDR FUNC FILE:LINE ; ...   (leaf first)
# with the location ids resolved, so that two profiles compare regardless
# of how their tables are numbered and ordered (which is arbitrary: Go
# builds them from a map). Sort the output to compare.
/^Samples:/   { sect = "s"; next }
/^Locations/  { sect = "l"; next }
/^Mappings/   { sect = "m"; next }
sect == "s" && /^ *[0-9]+ +[0-9]+: / {
    ns++
    sub(/:/, "", $2)
    val[ns] = $1 " " $2
    ids[ns] = ""
    for (i = 3; i <= NF; i++) ids[ns] = ids[ns] " " $i
    next
}
sect == "l" && /^ *[0-9]+: / {
    id = $1; sub(/:/, "", id)
    cur = id
    s = $2
    for (i = 3; i <= NF; i++) if ($i !~ /^(M|s)=/) s = s " " $i
    loc[id] = s
    next
}
sect == "l" && /^ +[^ ]/ {  # an inlined frame of the location above
    s = ""
    for (i = 1; i <= NF; i++) if ($i !~ /^(M|s)=/) s = s " " $i
    loc[cur] = loc[cur] " +" s
    next
}
END {
    for (k = 1; k <= ns; k++) {
        n = split(ids[k], a, " ")
        line = val[k] " |"
        for (i = 1; i <= n; i++) line = line " " loc[a[i]] " ;"
        print line
    }
}
