#!/bin/sh
# The shell-script workload of `make compare` (microbench's shell_loop):
# N iterations of what scripts do all day: arithmetic, a case, a test, and
# a command substitution that forks and execs an applet (busybox expr).
#   loop.sh N
n=$1 i=0 sum=0
while [ "$i" -lt "$n" ]; do
	case $i in
	*5) sum=$((sum + 2)) ;;
	*) sum=$((sum + 1)) ;;
	esac
	i=$(expr "$i" + 1)
done
echo "loop: $n iterations, sum $sum"
