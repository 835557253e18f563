# Draws the cost benchmark's plots from the data frugal_sim writes into `dir`:
#   gnuplot -e "dir='bench/results'" bench/sim/plots.gp
# (scripts/bench cost calls it when gnuplot is installed.)
if (!exists("dir")) dir = "bench/results"
set terminal pngcairo size 900,560 font ",11"
set grid
set key outside right top

# 1. Mean cost per job fraction, per policy (experiment 1).
set output dir."/cost_vs_fraction.png"
set title "Experiment 1: mean cost vs job fraction (on-demand only = 1)"
set xlabel "job fraction C0/R0"
set ylabel "mean normalised cost"
set yrange [0:1.1]
plot for [c=2:8] dir."/plot_cost_vs_fraction.dat" using 1:c with linespoints lw 2 title columnheader(c)

# 2. Distribution of the normalised cost over every run, per policy (experiment 1).
set output dir."/cost_distribution.png"
set title "Experiment 1: distribution of normalised cost over all runs"
set xlabel "normalised cost"
set ylabel "share of runs at or below"
set xrange [0:1.4]
set yrange [0:1]
plot for [c=2:8] dir."/plot_cost_dist.dat" using c:1 with lines lw 2 title columnheader(c)
unset xrange

# 3. One job's timeline: where it runs, and its progress.
set output dir."/timeline.png"
set terminal pngcairo size 1000,640 font ",11"
set multiplot layout 2,1 title "One job: spot availability and where each policy runs it"
unset key
set title ""
set xlabel ""
set ylabel ""
set yrange [-0.5:3.5]
set ytics ("greedy" 0, "uniform-progress" 1, "frugal" 2, "spot up" 3)
set xrange [0:*]
# state colours: idle grey, changeover orange, spot green, on-demand red
col(s) = s == 0 ? 0xdddddd : s == 1 ? 0xff9900 : s == 2 ? 0x2ca02c : 0xd62728
plot dir."/plot_timeline.dat" using 1:(3):($2 > 0 ? 0x2ca02c : 0xdddddd) with points pt 5 ps 0.6 lc rgb variable, \
     '' using 1:(2):(col($3)) with points pt 5 ps 0.6 lc rgb variable, \
     '' using 1:(1):(col($5)) with points pt 5 ps 0.6 lc rgb variable, \
     '' using 1:(0):(col($7)) with points pt 5 ps 0.6 lc rgb variable
set key inside left top
set xlabel "hours since submission (green spot, red on-demand, orange changeover, grey idle)"
set ylabel "work done (h)"
set yrange [0:*]
set ytics auto
plot dir."/plot_timeline.dat" using 1:4 with lines lw 2 title "frugal", \
     '' using 1:6 with lines lw 2 title "uniform-progress", \
     '' using 1:8 with lines lw 2 title "greedy"
unset multiplot
