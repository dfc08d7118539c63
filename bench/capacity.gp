# bench/capacity.gp: p50 and p99 delay (append start to the reader's
# receipt) against the number of live streams, per edition and for the
# in-process memoryStream floor.  Run by bench/capacity.sh:
#   gnuplot -e "datafile='capacity.dat'; outfile='capacity.svg'; subtitle='...'" bench/capacity.gp
# capacity.dat columns: N, then p50 and p99 (ms) of c, sql, memory; "?" marks
# a missing point.
if (!exists("datafile")) datafile = 'capacity.dat'
if (!exists("outfile")) outfile = 'capacity.svg'
if (!exists("subtitle")) subtitle = ''

set terminal svg size 900,560 font 'sans,12' noenhanced background rgb 'white'
set output outfile
set datafile missing '?'
set title "Live streams: delay from a producer's append to its reader (20 batches/s each)\n".subtitle font 'sans,13'
set key outside center bottom horizontal maxrows 2 Left reverse samplen 3 spacing 1.1 font 'sans,11' width -2
set grid xtics ytics mytics lc rgb '#dddddd'
set logscale x 2
set logscale y 10
set xlabel 'concurrent streams N (one producer and one reader each)'
set ylabel 'delay (ms, log scale)'
set format y '%g'
set style line 1 lc rgb '#1f77b4' lw 2.5 pt 7 ps 1.1
set style line 2 lc rgb '#1f77b4' lw 1.5 pt 6 ps 1.0 dt 2
set style line 3 lc rgb '#d62728' lw 2.5 pt 5 ps 1.1
set style line 4 lc rgb '#d62728' lw 1.5 pt 4 ps 1.0 dt 2
set style line 5 lc rgb '#2ca02c' lw 2.5 pt 9 ps 1.1
set style line 6 lc rgb '#2ca02c' lw 1.5 pt 8 ps 1.0 dt 2
set style line 7 lc rgb '#888888' lw 1 dt 3
set arrow from graph 0, first 50 to graph 1, first 50 nohead ls 7
set arrow from graph 0, first 100 to graph 1, first 100 nohead ls 7
plot datafile using 1:3 with linespoints ls 1 title 'C edition p99', \
     ''       using 1:2 with linespoints ls 2 title 'C edition p50', \
     ''       using 1:5 with linespoints ls 3 title 'SQL edition p99', \
     ''       using 1:4 with linespoints ls 4 title 'SQL edition p50', \
     ''       using 1:7 with linespoints ls 5 title 'memoryStream p99', \
     ''       using 1:6 with linespoints ls 6 title 'memoryStream p50'
