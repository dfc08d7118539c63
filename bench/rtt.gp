# bench/rtt.gp: throughput against the network round trip, one panel per
# client count.  Run by bench/rtt.sh:
#   gnuplot -e "datafile='rtt.dat'; outfile='rtt.png'; clients='8 64'; subtitle='...'" bench/rtt.gp
# rtt.dat: one data block per client count; columns: measured round trip
# (ms), then the median tps of ensure_auto, ensure_txn, app_txn,
# plpgsql_ensure_auto, create_lock, create_lease3, create_lease2.
if (!exists("datafile")) datafile = 'rtt.dat'
if (!exists("outfile")) outfile = 'rtt.png'
if (!exists("clients")) clients = '8 64'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 1000,1200 font 'sans,11' noenhanced
set output outfile
set key outside center bottom horizontal maxrows 4 Left reverse samplen 3 spacing 1.1 font 'sans,10' width -2
set grid xtics ytics mytics lc rgb '#dddddd'
set xlabel 'round trip added (ms, measured)'
set ylabel 'throughput (transactions/s, median; log scale)'
set logscale y 10
set format y '%g'
set style line 1 lc rgb '#1f77b4' lw 2.5 pt 7 ps 1.2
set style line 2 lc rgb '#d62728' lw 2.5 pt 7 ps 1.2
set style line 3 lc rgb '#ff7f0e' lw 2 pt 5 ps 1.1 dt 2
set style line 4 lc rgb '#2ca02c' lw 2 pt 9 ps 1.2 dt 4
set style line 5 lc rgb '#8c564b' lw 2 pt 11 ps 1.2
set style line 6 lc rgb '#9467bd' lw 2 pt 13 ps 1.2 dt 3
set style line 7 lc rgb '#17becf' lw 2.5 pt 13 ps 1.2

n = words(clients)
set multiplot layout n,1 title "sandbox_ensure and the create cycle behind a network round trip\n".subtitle font 'sans,13'
do for [i=1:n] {
  set title word(clients, i).' clients'
  plot datafile index (i-1) using 1:2 with linespoints ls 1 title 'ensure, autocommit (1 round trip)', \
       ''       index (i-1) using 1:3 with linespoints ls 2 title 'BEGIN; ensure; COMMIT (3)', \
       ''       index (i-1) using 1:4 with linespoints ls 3 title 'app-side: BEGIN; lock; SELECT; UPDATE; COMMIT (5)', \
       ''       index (i-1) using 1:5 with linespoints ls 4 title 'PL/pgSQL ensure, autocommit (1)', \
       ''       index (i-1) using 1:6 with linespoints ls 5 title 'create, lock mode: BEGIN; ensure; upsert; COMMIT (4)', \
       ''       index (i-1) using 1:7 with linespoints ls 6 title 'create, lease mode: ensure; upsert; release (3 commits)', \
       ''       index (i-1) using 1:8 with linespoints ls 7 title 'create, lease mode: ensure; upsert_release (2 commits)'
}
unset multiplot
