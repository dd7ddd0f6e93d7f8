#include "chart.h"

#include <kiln/error.h>
#include <kiln/io/atomic_file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "report.h"

namespace kiln::bench {

namespace {

namespace fs = std::filesystem;

void write_atomically(const fs::path& path, const std::string& text) {
  io::AtomicFileWriter out(path);
  out.write(text.data(), text.size());
  out.commit();
}

// Devices that have at least one figure, in the order of the run.
std::vector<std::string> charted_devices(const RunContext& c,
                                         const std::vector<CellResult>& cells) {
  std::vector<std::string> devices;
  for (const DeviceEntry& d : c.devices)
    for (const CellResult& cell : cells)
      if (cell.device == d.spec && cell.relative > 0) {
        devices.push_back(d.spec);
        break;
      }
  return devices;
}

// One line per workload: the name, then per device its relative speed at the median,
// the range its repetitions span (the baseline's median over the cell's slowest and
// fastest repetition), and its label: the relative speed and the absolute median time
// ("?" and "-" where the cell has no figure).
std::string data_file(const std::vector<std::string>& devices, const RunContext& c,
                      const std::vector<CellResult>& cells) {
  std::ostringstream out;
  out << "# kiln-bench compare: speed relative to " << c.baseline
      << " (workload, then per device: median, slowest and fastest repetition, label)\n"
         "# workload";
  for (const std::string& d : devices) out << "  " << d << " low high label";
  out << "\n";
  for (const std::string& workload : c.options.workloads) {
    out << workload;
    for (const std::string& device : devices) {
      auto cell = std::find_if(cells.begin(), cells.end(), [&](const CellResult& r) {
        return r.workload == workload && r.device == device && r.relative > 0;
      });
      if (cell == cells.end()) {
        out << "  ? ? ? -";
        continue;
      }
      const double r = cell->relative;
      const double baseline_seconds = r * cell->seconds.median;
      char numbers[96], label[64];
      std::snprintf(numbers, sizeof numbers, "%.6g %.6g %.6g", r,
                    baseline_seconds / cell->seconds.max, baseline_seconds / cell->seconds.min);
      std::snprintf(label, sizeof label,
                    r >= 10    ? "%.0f%s %s"
                    : r >= 0.1 ? "%.2f%s %s"
                               : "%.2g%s %s",
                    r, cell->fallbacks.calls ? "*" : "",
                    format_seconds(cell->seconds.median).c_str());
      out << "  " << numbers << " \"" << label << "\"";
    }
    out << "\n";
  }
  return out.str();
}

std::string quoted(const std::string& text) {
  std::string q = "\"";
  for (char ch : text) q += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
  return q + "\"";
}

std::string script(const std::vector<std::string>& devices, const RunContext& c,
                   const std::vector<CellResult>& cells) {
  double low = 0, high = 0;
  bool fallbacks = false;
  for (const CellResult& cell : cells) {
    if (cell.relative <= 0) continue;
    // The whole error bar must fit: the fastest and slowest repetitions' speeds.
    const double baseline_seconds = cell.relative * cell.seconds.median;
    const double slowest = baseline_seconds / cell.seconds.max;
    const double fastest = baseline_seconds / cell.seconds.min;
    low = low > 0 ? std::min(low, slowest) : slowest;
    high = std::max(high, fastest);
    fallbacks = fallbacks || cell.fallbacks.calls > 0;
  }
  const bool log_scale = high / low > 10;
  const size_t n = devices.size();
  std::ostringstream out;
  out << "# Draws compare.svg and compare.png from compare.dat: cd into this folder and run\n"
         "# `gnuplot compare.gp`. Written by kiln-bench compare.\n"
         "if (!exists(\"svg_out\")) svg_out = \"compare.svg\"\n"
         "if (!exists(\"png_out\")) png_out = \"compare.png\"\n"
         "set terminal svg size 960,480 dynamic font \"sans,12\" background rgb \"white\"\n"
         "set output svg_out\n"
         "set title "
      << quoted("kiln-bench compare: " + std::string(size_name(c.options.size)) + " size, " +
                std::string(dtype_name(c.options.dtype)) + ", " + c.host_name + ", " +
                c.date.substr(0, 10))
      << " noenhanced\n"
      << "set ylabel " << quoted("speed relative to " + c.baseline + " (higher is faster)")
      << " noenhanced\n"
      << "set style data histograms\nset style histogram errorbars gap 1 lw 1\n"
         "set style fill solid 0.85 border -1\nset boxwidth 1\n"
         "set datafile missing \"?\"\nset grid ytics\nset key inside top left horizontal "
         "noenhanced\n"
         "set xtics nomirror noenhanced\nset border 3\nset ytics nomirror\n";
  // On a log scale a bar starts at the bottom of the axis: keep the smallest one visible.
  // Above the largest: room for its label and for the key.
  if (log_scale)
    out << "set logscale y\nset yrange [" << low / 2 << ":" << high * 4 << "]\n";
  else
    out << "set yrange [0:" << high * 1.35 << "]\n";
  out << "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb \"gray40\"\n";
  if (fallbacks)
    out << "set label \"* ran ops through the CPU fallback\" at graph 0.01, graph -0.1 "
           "font \",10\" noenhanced\nset bmargin 5\n";
  // Each bar carries an error bar from the slowest to the fastest repetition, and a
  // label with the relative speed and the absolute median time per step.
  out << "set label \"bars: median; whiskers: slowest to fastest repetition; labels: speed, "
         "time per step\" at graph 0.99, graph 0.97 right font \",9\" noenhanced\n";
  out << "plot ";
  for (size_t j = 0; j < n; ++j)
    out << (j ? ", \\\n     " : "") << "\"compare.dat\" using " << 2 + 4 * j << ":" << 3 + 4 * j
        << ":" << 4 + 4 * j << (j ? "" : ":xtic(1)") << " title " << quoted(devices[j]);
  // The label above each bar: bar j of the cluster at x sits at x + (j - (n-1)/2) / (n+1).
  for (size_t j = 0; j < n; ++j)
    out << ", \\\n     \"compare.dat\" using ($0 + (" << j << " - " << (n - 1) << "/2.0) / "
        << n + 1 << ".0):" << 4 + 4 * j << ":" << 5 + 4 * j
        << " with labels offset 0,0.7 font \",8\" noenhanced notitle";
  out << "\n";
  return out.str() +
         "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
         "  set terminal pngcairo size 960,480 font \"sans,10\" background rgb \"white\"\n"
         "} else {\n  set terminal png size 960,480\n}\n"
         "set output png_out\nreplot\nunset output\n";
}

// Runs `gnuplot -e <defines> compare.gp` in `dir`; returns "" or what went wrong.
std::string run_gnuplot(const std::string& gnuplot, const fs::path& dir,
                        const std::string& defines) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return "cannot make a pipe";
  pid_t pid = fork();
  if (pid < 0) return "cannot fork";
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    if (chdir(dir.c_str()) != 0) _exit(126);
    execl(gnuplot.c_str(), gnuplot.c_str(), "-e", defines.c_str(), "compare.gp", (char*)nullptr);
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string output;
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0) output.append(buffer, size_t(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  while (!output.empty() && output.back() == '\n') output.pop_back();
  if (output.size() > 600) output = "..." + output.substr(output.size() - 600);
  return gnuplot + " failed (" +
         (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                            : "signal " + std::to_string(WTERMSIG(status))) +
         ")" + (output.empty() ? "" : ": " + output);
}

// Puts a file gnuplot wrote in place through AtomicFileWriter (fsync, rename).
void install(const fs::path& temporary, const fs::path& target) {
  std::ifstream in(temporary, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  KILN_CHECK(in.good() || in.eof(), "cannot read ", temporary.string());
  KILN_CHECK(!bytes.empty(), "gnuplot wrote an empty ", target.filename().string());
  write_atomically(target, bytes);
}

}  // namespace

std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path ? path : "");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    fs::path candidate = fs::path(folder.empty() ? "." : folder) / program;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  return "";
}

ChartResult draw_chart(const fs::path& dir, const RunContext& context,
                       const std::vector<CellResult>& cells) {
  const std::vector<std::string> devices = charted_devices(context, cells);
  if (devices.empty()) return {false, "no cell has a speed relative to a baseline to plot"};
  write_atomically(dir / "compare.dat", data_file(devices, context, cells));
  write_atomically(dir / "compare.gp", script(devices, context, cells));
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty())
    return {false,
            "gnuplot is not on PATH (Debian: apt-get install gnuplot-nox); the data and "
            "script are in " +
                (dir / "compare.gp").string()};
  const std::string tag = std::to_string(getpid());
  const fs::path svg_tmp = dir / (".compare.svg.gnuplot-" + tag);
  const fs::path png_tmp = dir / (".compare.png.gnuplot-" + tag);
  std::string error = run_gnuplot(gnuplot, dir,
                                  "svg_out='" + svg_tmp.filename().string() + "'; png_out='" +
                                      png_tmp.filename().string() + "'");
  if (error.empty()) {
    try {
      install(svg_tmp, dir / "compare.svg");
      install(png_tmp, dir / "compare.png");
    } catch (const kiln::Error& e) {
      error = e.what();
    }
  }
  std::error_code ignored;
  fs::remove(svg_tmp, ignored);
  fs::remove(png_tmp, ignored);
  if (!error.empty()) return {false, error};
  return {true, (dir / "compare.svg").string() + ", " + (dir / "compare.png").string()};
}

}  // namespace kiln::bench
