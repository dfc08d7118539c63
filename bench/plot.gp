# bench/plot.gp: throughput and p99 latency against client count for
# sandbox_ensure and its baselines.  Run by bench/run.sh:
#   gnuplot -e "datafile='plot.dat'; outfile='plot.png'; subtitle='...'" bench/plot.gp
# plot.dat columns: clients, then for each workload (see the header line)
# median tps and median p99 (ms); "?" marks a missing point.
if (!exists("datafile")) datafile = 'plot.dat'
if (!exists("outfile")) outfile = 'plot.png'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 1000,1100 font 'sans,11' noenhanced
set output outfile
set datafile missing '?'
set key outside center bottom horizontal maxrows 3 Left reverse samplen 3 spacing 1.1 font 'sans,10' width -2
set grid xtics ytics mytics lc rgb '#dddddd'
set logscale x 2
set xtics (1, 2, 4, 8, 16, 32, 64, 128)
set xrange [0.8:80]
set xlabel 'clients (pgbench -c, prepared statements)'
set style line 1 lc rgb '#1f77b4' lw 2.5 pt 7 ps 1.2
set style line 2 lc rgb '#ff7f0e' lw 2 pt 5 ps 1.1 dt 2
set style line 3 lc rgb '#2ca02c' lw 2 pt 9 ps 1.2 dt 4
set style line 4 lc rgb '#d62728' lw 2.5 pt 7 ps 1.2
set style line 5 lc rgb '#9467bd' lw 2 pt 5 ps 1.1 dt 2
set style line 6 lc rgb '#8c564b' lw 2 pt 9 ps 1.2 dt 4

set multiplot layout 2,1 title "sandbox_ensure (resume path) and its baselines\n".subtitle font 'sans,13'

set ylabel 'throughput (transactions/s, median)'
set yrange [0:*]
set format y '%.0f'
plot datafile using 1:2  with linespoints ls 1 title 'ensure, autocommit', \
     ''       using 1:4  with linespoints ls 2 title 'bare UPDATE ... RETURNING', \
     ''       using 1:6  with linespoints ls 3 title 'PL/pgSQL ensure, autocommit', \
     ''       using 1:8  with linespoints ls 4 title 'BEGIN; ensure; COMMIT', \
     ''       using 1:10 with linespoints ls 5 title 'app-side: BEGIN; lock; SELECT; UPDATE; COMMIT', \
     ''       using 1:12 with linespoints ls 6 title 'BEGIN; PL/pgSQL ensure; COMMIT'

unset key
set ylabel 'p99 latency (ms, median of runs; log scale)'
set logscale y 10
set yrange [*:*]
set format y '%g'
plot datafile using 1:3  with linespoints ls 1 title 'ensure, autocommit', \
     ''       using 1:5  with linespoints ls 2 title 'bare UPDATE ... RETURNING', \
     ''       using 1:7  with linespoints ls 3 title 'PL/pgSQL ensure, autocommit', \
     ''       using 1:9  with linespoints ls 4 title 'BEGIN; ensure; COMMIT', \
     ''       using 1:11 with linespoints ls 5 title 'app-side: BEGIN; lock; SELECT; UPDATE; COMMIT', \
     ''       using 1:13 with linespoints ls 6 title 'BEGIN; PL/pgSQL ensure; COMMIT'
unset multiplot
