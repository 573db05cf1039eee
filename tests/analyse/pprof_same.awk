# pprof_same.awk GO CTRACE: whether two normalised profiles (pprof_norm.awk,
# `COUNT DELAY | STACK` a line) show the same samples: the same stacks
# with the same counts, and delays that differ by no more than a
# nanosecond a contention. Go orders events of equal time on different
# threads as its map of threads iterates, which changes from run to run,
# and bumps a time by 1 ns to keep them increasing: the same trace gives
# Go 1.23 a delay 1 ns apart in one run of a dozen (docs/reader.md).
# Samples of one stack are summed first. Exit status 0 if the same.
{
    stack = $0
    sub(/^[^|]*\|/, "", stack)
    f = FILENAME == ARGV[1] ? 1 : 2
    count[f, stack] += $1
    delay[f, stack] += $2
    stacks[stack] = 1
}
END {
    for (s in stacks) {
        if (count[1, s] != count[2, s]) exit 1
        d = delay[1, s] - delay[2, s]
        if (d < 0) d = -d
        if (d > count[1, s]) exit 1
    }
    exit 0
}
