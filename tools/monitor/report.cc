#include "monitor/report.h"

#include <cstdio>
#include <map>
#include <set>

#include "pilot/calibration/report_style.h"
#include "pilot/calibration/svg_chart.h"
#include "pilot/core/text.h"

namespace pilot::cli::monitor {
namespace {

using text::escapeXml;

std::string fmt(const char* f, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, f, v);
  return buffer;
}

std::string pad(std::string s, size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

std::string algoProto(const Group& g) {
  if (g.collective == "other") return "other";
  if (g.algo.empty()) return "-";  // a Send or Recv
  // An all-to-all NCCL ran as Send/Recv: each operation picked its protocol.
  if (g.algo == "P2P") return "P2P (grouped)";
  return g.algo + "/" + g.proto;
}

std::string lateLine(const LateArriver& l) {
  if (l.compared == 0) return "late arriver: one rank's file only, nothing to compare";
  if (l.rank < 0) {
    return "late arriver: none (no rank had the shortest kernels in most of the " +
           std::to_string(l.compared) + " groups)";
  }
  return "late arriver: rank " + std::to_string(l.rank) + " (its kernels were the shortest in " +
         std::to_string(l.wins) + " of " + std::to_string(l.compared) + " groups, " +
         fmt("%.0f", l.spread * 100) + "% below the median rank: the others waited for it)";
}

std::map<std::string, std::vector<const Group*>> byComm(const Analysis& a) {
  std::map<std::string, std::vector<const Group*>> out;
  for (const Group& g : a.groups) out[g.comm].push_back(&g);
  return out;
}

const LateArriver* lateOf(const Analysis& a, const std::string& comm) {
  for (const LateArriver& l : a.late)
    if (l.comm == comm) return &l;
  return nullptr;
}

std::string commTitle(const Analysis& a, const Group& g) {
  std::string s = "comm " + g.comm;
  if (!g.commName.empty()) s += " \"" + g.commName + "\"";
  s += ": " + std::to_string(g.nRanks) + " ranks on " + std::to_string(g.nNodes) +
       (g.nNodes == 1 ? " node" : " nodes");
  auto folded = a.folded.find(g.comm);
  if (folded != a.folded.end() && folded->second > 1) {
    s += ", " + std::to_string(folded->second) + " finished communicators of this name and shape";
  }
  return s;
}

std::string liveTitle(const std::string& comm, const std::string& name, const std::string& job) {
  return "comm " + comm + (name.empty() ? "" : " \"" + name + "\"") +
         (job.empty() ? "" : " (job " + job + ")");
}

std::string liveHeadline(const Live& l) {
  if (l.stateFiles == 0) {
    return "none of the " + std::to_string(l.stateFilesSeen) +
           " state file(s) could be used (notes above)";
  }
  return std::to_string(l.stateFiles) + " state file(s), " + std::to_string(l.comms) +
         " communicator(s) as of " + l.asOf + ": " +
         (l.stalls.empty() ? "nothing stalled" : std::to_string(l.stalls.size()) + " stalled");
}

/// A stall in one line: what is stuck, whom to look at and why (hang's words).
std::string stallHead(const LiveStall& s) {
  return "comm " + s.comm + (s.commName.empty() ? "" : " \"" + s.commName + "\"") + " (" +
         std::to_string(s.nRanks) + " ranks" + (s.job.empty() ? "" : ", job " + s.job) +
         "): " + s.operation + ", stalled " + fmt("%.1f", s.stalledS) + " s; suspects " +
         (s.suspects.empty() ? "none" : s.suspects);
}

std::string stragglerText(const LiveStraggler& s) {
  return "rank " + std::to_string(s.rank) + " (the shortest in " + std::to_string(s.wins) + " of " +
         std::to_string(s.compared) + " groups): the others lost " + fmt("%.3f", s.lostMsPerOp) +
         " ms per operation waiting for it";
}

/// The communicators judged with no straggler, said after those with one.
std::string noStragglerText(const Live& l) {
  if (l.stragglers.empty()) {
    if (l.comms > 0 && l.measured == 0)
      return "stragglers: not measured yet (no export window has closed on a live rank)";
    return "stragglers: none in the last export windows";
  }
  const size_t others = l.comms > l.stragglers.size() ? l.comms - l.stragglers.size() : 0;
  return others == 0
             ? ""
             : "stragglers: none in the other " + std::to_string(others) + " communicator(s)";
}

std::string liveText(const Live& l) {
  std::string out = "\nlive: " + liveHeadline(l) + "\n";
  if (l.stateFiles == 0) return out;
  for (const LiveStall& s : l.stalls) {
    out +=
        "  STALLED " + stallHead(s) + "; why: " + s.why + "; every rank: " + l.hangCommand + "\n";
  }
  for (const LiveStraggler& s : l.stragglers) {
    out += "  straggler (last export window): " + liveTitle(s.comm, s.commName, s.job) + ": " +
           stragglerText(s) + "\n";
  }
  if (const std::string none = noStragglerText(l); !none.empty()) out += "  " + none + "\n";
  return out;
}

std::string liveHtml(const Live& l) {
  std::string h = "<h2>live</h2>\n<div class=\"meta\">" + escapeXml(liveHeadline(l));
  if (l.stateFiles == 0) return h + "</div>\n";
  h += "; from the ranks' state files, judged as <code>nccl-pilot hang</code> judges them; "
       "stragglers from each rank's last export window</div>\n";
  for (const LiveStall& s : l.stalls) {
    h += "<p class=\"warn\"><b>STALLED</b> " + escapeXml(stallHead(s)) +
         "<br>why: " + escapeXml(s.why) + "<br>every rank: <code>" + escapeXml(l.hangCommand) +
         "</code></p>\n";
  }
  if (!l.stragglers.empty()) {
    h += "<table><tr><th>communicator</th><th>job</th><th>straggler rank</th>"
         "<th>groups won / compared</th><th>ms lost per operation</th></tr>\n";
    for (const LiveStraggler& s : l.stragglers) {
      h += "<tr class=\"warn\"><td>" +
           escapeXml(s.comm + (s.commName.empty() ? "" : " \"" + s.commName + "\"")) + "</td><td>" +
           (s.job.empty() ? "–" : escapeXml(s.job)) + "</td><td class=\"num\">" +
           std::to_string(s.rank) + "</td><td class=\"num\">" + std::to_string(s.wins) + " / " +
           std::to_string(s.compared) + "</td><td class=\"num\">" + fmt("%.3f", s.lostMsPerOp) +
           "</td></tr>\n";
    }
    h += "</table>\n";
  }
  if (const std::string none = noStragglerText(l); !none.empty()) {
    h += "<p class=\"" +
         std::string(l.stragglers.empty() && l.stalls.empty() ? "verdict" : "meta") + "\">" +
         escapeXml(none) + "</p>\n";
  }
  return h;
}

}  // namespace

std::string reportText(const Analysis& a, double driftThreshold, const Live& live) {
  std::string out = "nccl-pilot monitor: " + std::to_string(a.files) + " file(s), " +
                    std::to_string(a.rankRecords) + " (communicator, rank) record(s)\n";
  if (live.present()) out += liveText(live);
  size_t drifting = 0;
  for (const auto& [comm, groups] : byComm(a)) {
    std::set<int> ranks;
    for (const Group* g : groups)
      for (const RankFigures& f : g->ranks) ranks.insert(f.rank);
    out += "\n" + commTitle(a, *groups.front()) + " (" + std::to_string(ranks.size()) +
           " in the files)\n";
    out += "  " + pad("collective", 14) + pad("size", 11) + pad("algo/proto", 16) +
           pad("ch", 4, true) + "  " + pad("decision", 18) + pad("calls", 8, true) +
           pad("p50 us", 10, true) + pad("p99 us", 10, true) + pad("busbw GB/s", 12, true) +
           pad("calibrated us", 15, true) + pad("live/cal", 10, true) + "\n";
    for (const Group* g : groups) {
      out += "  " + pad(g->collective, 14) + pad(g->messageSize, 11) + pad(algoProto(*g), 16) +
             pad(std::to_string(g->channels), 4, true) + "  " + pad(g->decision, 18) +
             pad(std::to_string(g->calls), 8, true) + pad(fmt("%.1f", g->p50Us), 10, true) +
             pad(fmt("%.1f", g->p99Us), 10, true) + pad(fmt("%.2f", g->busGbs), 12, true) +
             pad(g->expectedUs > 0 ? fmt("%.1f", g->expectedUs) : "-", 15, true) +
             pad(g->driftRatio > 0 ? fmt("%.2f", g->driftRatio) : "-", 10, true) +
             (g->drift ? "  DRIFT" : "") + "\n";
      drifting += g->drift ? 1 : 0;
    }
    if (const LateArriver* l = lateOf(a, comm)) out += "  " + lateLine(*l) + "\n";
  }
  out += "\n";
  if (a.groups.empty()) return out;  // live state only: no summary measured anything yet
  if (drifting > 0) {
    out += "drift: " + std::to_string(drifting) + " tuned group(s) below " +
           fmt("%.0f", (1 - driftThreshold) * 100) +
           "% of their calibrated bus bandwidth; re-run nccl-pilot fit on this machine\n";
  } else {
    out += "drift: none below " + fmt("%.0f", (1 - driftThreshold) * 100) +
           "% of the calibrated bus bandwidth\n";
  }
  return out;
}

std::string reportHtml(const Analysis& a, const HtmlOptions& o, const Live& live) {
  namespace chart = calibration::detail;
  static const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                         "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
  size_t drifting = 0;
  for (const Group& g : a.groups) drifting += g.drift ? 1 : 0;
  size_t lateFound = 0;
  for (const LateArriver& l : a.late) lateFound += l.rank >= 0 ? 1 : 0;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
                  escapeXml(o.title) + "</title><style>" + chart::kReportCss +
                  "</style></head><body>\n<h1>" + escapeXml(o.title) + "</h1>\n";
  h += "<div class=\"meta\">from " + std::to_string(a.files) + " summary file(s); nccl-pilot " +
       escapeXml(o.toolVersion) + "</div>\n<div class=\"cards\"><div><b>" +
       std::to_string(a.rankRecords) + "</b>ranks</div><div><b>" +
       std::to_string(byComm(a).size()) + "</b>communicators</div><div><b>" +
       std::to_string(drifting) + "</b>drifting groups</div><div><b>" + std::to_string(lateFound) +
       "</b>late arrivers</div>" +
       (live.present()
            ? "<div><b>" + std::to_string(live.stalls.size()) + "</b>stalled now</div><div><b>" +
                  std::to_string(live.stragglers.size()) + "</b>stragglers now</div>"
            : "") +
       "</div>\n";
  if (!a.notes.empty()) {
    h += "<ul class=\"notes\">";
    for (const std::string& n : a.notes) h += "<li>" + escapeXml(n) + "</li>";
    h += "</ul>\n";
  }
  if (live.present()) h += liveHtml(live);
  int chartId = 0;
  for (const auto& [comm, groups] : byComm(a)) {
    h += "<h2>" + escapeXml(commTitle(a, *groups.front())) + "</h2>\n";
    if (const LateArriver* l = lateOf(a, comm)) {
      h += std::string("<p class=\"") + (l->rank >= 0 ? "warn" : "verdict") + "\">" +
           escapeXml(lateLine(*l)) + "</p>\n";
    }
    h += "<table><tr><th>collective</th><th>size</th><th>algo/proto</th><th>channels</th>"
         "<th>decision</th><th>calls</th><th>p50 µs</th><th>p99 µs</th><th>bus GB/s</th>"
         "<th>calibrated µs</th><th>live / calibrated</th><th>shortest rank</th></tr>\n";
    for (const Group* g : groups) {
      h += std::string("<tr") + (g->drift ? " class=\"warn\"" : "") + "><td>" +
           escapeXml(g->collective) + "</td><td>" + escapeXml(g->messageSize) + "</td><td>" +
           escapeXml(algoProto(*g)) + "</td><td class=\"num\">" + std::to_string(g->channels) +
           "</td><td>" + escapeXml(g->decision) +
           (g->band.empty() ? "" : " · " + escapeXml(g->band)) + "</td><td class=\"num\">" +
           std::to_string(g->calls) + "</td><td class=\"num\">" + fmt("%.1f", g->p50Us) +
           "</td><td class=\"num\">" + fmt("%.1f", g->p99Us) + "</td><td class=\"num\">" +
           fmt("%.2f", g->busGbs) + "</td><td class=\"num\">" +
           (g->expectedUs > 0 ? fmt("%.1f", g->expectedUs) : "–") + "</td><td class=\"num\">" +
           (g->driftRatio > 0 ? fmt("%.2f", g->driftRatio) + (g->drift ? " drift" : "") : "–") +
           "</td><td class=\"num\">" +
           (g->shortestRank >= 0 ? std::to_string(g->shortestRank) : "–") + "</td></tr>\n";
    }
    h += "</table>\n<div class=\"charts\">\n";
    std::map<std::string, std::vector<const Group*>> byCollective;
    for (const Group* g : groups)
      if (g->collective != "other") byCollective[g->collective].push_back(g);
    for (const auto& [collective, list] : byCollective) {
      chart::Chart c;
      c.id = "c" + std::to_string(chartId++);
      c.title = collective + " bus bandwidth per rank";
      c.yLabel = "GB/s";
      c.yFormat = [](double v) { return fmt("%.3g", v); };
      std::map<int, chart::ChartLine> ranks;
      chart::ChartLine calibrated;
      calibrated.name = "calibrated";
      calibrated.color = "#222222";
      calibrated.dashed = true;
      for (const Group* g : list) {
        const double x = static_cast<double>(g->sizeBucketBytes);
        for (const RankFigures& f : g->ranks) {
          chart::ChartLine& line = ranks[f.rank];
          line.name = "rank " + std::to_string(f.rank);
          line.color = kColours[f.rank % 10];
          line.points.push_back({x, f.busGbs, f.busGbs, f.busGbs, f.rank == g->shortestRank});
        }
        if (g->driftRatio > 0) {
          const double bw = g->busGbs / g->driftRatio;
          calibrated.points.push_back({x, bw, bw, bw, false});
        }
      }
      for (auto& [rank, line] : ranks) c.lines.push_back(line);
      if (!calibrated.points.empty()) c.lines.push_back(calibrated);
      h += chart::renderChart(c);
    }
    h += "</div>\n";
  }
  h += "<footer>Kernel times are the longest channel's GPU stop minus start (NCCL's KernelCh "
       "events); bus bandwidth uses nccl-tests' factors. The rank whose kernels are the shortest "
       "is the one the others waited for. Marked points: the shortest rank of that size.</footer>"
       "\n</body></html>\n";
  return h;
}

}  // namespace pilot::cli::monitor
