# children.sh - run by bash under `ctrace run` (run_check.sh, case bash):
# a shell that starts children, and tells what they see.
#
# Usage: bash children.sh PIDFILE [environ]
#
# Writes bash's pid to PIDFILE (not to stdout, which must be the same
# traced and untraced), starts /bin/true 20 times and, with `environ`,
# prints the tracer's variables a child got from the kernel
# (/proc/self/environ: what a static program, or one with its own getenv,
# reads) and those bash itself shows.
echo $$ >"$1"
for i in $(seq 20); do /bin/true; done
if [ "${2:-}" = environ ]; then
    echo "child: $(grep -a -o -e LD_PRELOAD= -e 'CTRACE_[A-Z_]*=' /proc/self/environ | grep -v CTRACE_TEST_ | tr '\n' ' ')"
    echo "bash: $(env | grep -e ^LD_PRELOAD= -e ^CTRACE_ | grep -v ^CTRACE_TEST_ | tr '\n' ' ')"
fi
