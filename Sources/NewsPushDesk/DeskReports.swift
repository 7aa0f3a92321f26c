import FeedParsing
import Foundation
import NewsPushLedger
import NewsPushModel
import NewsPushSessions

/// The Reports page (SPEC §11): what each alert did, as a table and three pictures drawn on the
/// server as SVG (no script; presentation attributes only, so the page's CSP stays as it is).
/// The pictures are written here by hand: no Swift library draws SVG charts, and each is a few
/// shapes on a fixed view box that scales to the phone's width.
enum DeskReports {
    /// Alerts with opens drawn in the first picture.
    static let latestDrawn = 5
    /// The lines' colours (distinct for the colour-blind: Okabe–Ito).
    static let palette = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00"]

    static func page(_ reports: [AlertReport], timeZone: TimeZone, user: SignedIn, now: Date, flash: DeskPages.Flash?)
        -> String
    {
        let body: HTML = """
            <h1>Reports</h1>
            <p class="also">What each alert of the last 30 days did: the installations its tags reached when it went, \
            how many phones said they received and opened it, and how long it took to leave. No report knows who \
            opened what.</p>
            <section class="card"><h2>Opens per minute, first hour</h2>\(opensPerMinute(reports))</section>
            <section class="card"><h2>Open rate by category and hour of day</h2>\
            \(openRateGrid(reports, timeZone: timeZone))</section>
            <section class="card"><h2>Latency, first seen to accepted by the hub</h2>\
            \(latencyOverTime(reports, now: now))</section>
            \(table(reports))
            """
        return DeskPages.page(.reports, title: "Reports", user: user, flash: flash, body: body)
    }

    // MARK: The table

    static func table(_ reports: [AlertReport]) -> HTML {
        guard !reports.isEmpty else { return "<p class=\"empty\">No alert was sent in the last 30 days.</p>" }
        let rows: [HTML] = reports.map { r in
            let kind: HTML = r.kind == .push ? "" : "<div class=\"also\">\(text: r.kind.rawValue)</div>"
            return """
                <tr><td>\(text: r.acceptedAt.map(FeedDates.format) ?? "–")</td><td>\(text: r.category.rawValue)</td>\
                <td>\(text: r.title)\(kind)<div class="also">\(text: r.id)</div></td>\
                <td class="num">\(text: r.audience.map(String.init) ?? "–")</td>\
                <td class="num">\(text: r.delivered.map(String.init) ?? "–")</td>\
                <td class="num">\(r.counts.receivedTotal)</td><td class="num">\(r.counts.openedTotal)</td>\
                <td class="num">\(text: r.openRate.map(percent) ?? "–")</td>\
                <td class="num">\(text: r.latency.map(ReportSession.duration) ?? "–")</td>\
                <td class="num">\(text: r.counts.medianSecondsToOpen.map(ReportSession.duration) ?? "–")</td></tr>
                """
        }
        return """
            <div class="scroll"><table><thead><tr><th>Accepted</th><th>Category</th><th>Alert</th><th>Audience</th>\
            <th>Delivered</th><th>Received</th><th>Opened</th><th>Open rate</th><th>Latency</th><th>To open</th>\
            </tr></thead><tbody>\(rows)</tbody></table></div>
            """
    }

    static func percent(_ rate: Double) -> String { String(format: "%.1f %%", rate * 100) }

    // MARK: Pictures

    /// Lines of opens per minute over the first hour of the latest alerts that were opened.
    static func opensPerMinute(_ reports: [AlertReport]) -> HTML {
        let drawn = Array(reports.filter { $0.counts.openedTotal > 0 }.prefix(latestDrawn))
        guard !drawn.isEmpty else { return "<p class=\"empty\">No opens reported yet.</p>" }
        let plot = Plot(width: 400, height: 190)
        let peak = drawn.flatMap { r in (0..<60).map { r.counts.openedByBucket[$0] ?? 0 } }.max() ?? 1
        var marks: [HTML] = [
            plot.axes(
                xLabels: [(0, "0"), (15, "15"), (30, "30"), (45, "45"), (59, "59 min")], xMax: 59,
                yMax: Double(max(peak, 1)), yUnit: "")
        ]
        var legend: [HTML] = []
        var lines: [HTML] = []
        for (index, report) in drawn.enumerated() {
            let colour = palette[index % palette.count]
            let points = (0..<60).map { minute in
                plot.point(
                    x: Double(minute), xMax: 59, y: Double(report.counts.openedByBucket[minute] ?? 0),
                    yMax: Double(max(peak, 1)))
            }
            lines.append(
                """
                <polyline class="opens" fill="none" stroke="\(text: colour)" stroke-width="2.5" \
                points="\(text: points.map { "\(Plot.f($0.x)),\(Plot.f($0.y))" }.joined(separator: " "))">\
                <title>\(text: report.title)</title></polyline>
                """)
            legend.append(
                """
                <li><svg width="14" height="14" aria-hidden="true"><rect width="14" height="14" rx="3" \
                fill="\(text: colour)"/></svg> \(text: report.category.rawValue): \(text: report.title) \
                (\(report.counts.openedTotal) opens)</li>
                """)
        }
        // The latest alert's line is drawn last, over the others.
        marks += lines.reversed()
        return """
            \(plot.svg(label: "Opens per minute in the first hour of the latest alerts", marks))\
            <ul class="legend">\(legend)</ul>
            """
    }

    /// A grid of categories by hour of day: each cell's shade is the open rate of the alerts
    /// sent then (opened ÷ audience, summed over the alerts).
    static func openRateGrid(_ reports: [AlertReport], timeZone: TimeZone) -> HTML {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        var cells: [String: (opened: Int, audience: Int, alerts: Int)] = [:]
        for report in reports {
            guard let at = report.acceptedAt, let audience = report.audience, audience > 0 else { continue }
            let key = "\(report.category.rawValue) \(calendar.component(.hour, from: at))"
            let cell = cells[key] ?? (0, 0, 0)
            cells[key] = (cell.opened + report.counts.openedTotal, cell.audience + audience, cell.alerts + 1)
        }
        guard !cells.isEmpty else {
            return "<p class=\"empty\">No alert with a counted audience yet (the installations of newspush api).</p>"
        }
        let best = cells.values.map { Double($0.opened) / Double($0.audience) }.max() ?? 0
        let (left, top, size, rowHeight) = (76.0, 20.0, 13.0, 17.0)
        var marks: [HTML] = []
        for hour in stride(from: 0, to: 24, by: 3) {
            marks.append(
                "<text x=\"\(text: Plot.f(left + Double(hour) * size))\" y=\"14\" class=\"tick\">\(text: String(format: "%02d", hour))</text>"
            )
        }
        for (row, category) in NewsCategory.allCases.enumerated() {
            let y = top + Double(row) * rowHeight
            marks.append(
                "<text x=\"0\" y=\"\(text: Plot.f(y + 12))\" class=\"tick\">\(text: category.rawValue)</text>")
            for hour in 0..<24 {
                let x = left + Double(hour) * size
                let hourText = String(format: "%02d:00", hour)
                if let cell = cells["\(category.rawValue) \(hour)"] {
                    let rate = Double(cell.opened) / Double(cell.audience)
                    let shade = best > 0 ? 0.15 + 0.85 * rate / best : 0.15
                    marks.append(
                        """
                        <rect class="rate" x="\(text: Plot.f(x))" y="\(text: Plot.f(y))" width="\(text: Plot.f(size - 1))" \
                        height="\(text: Plot.f(rowHeight - 1))" fill="#0b57d0" fill-opacity="\(text: Plot.f(shade))">\
                        <title>\(text: category.rawValue) \(text: hourText): \(text: percent(rate)) of \(cell.audience) \
                        (\(cell.alerts) alerts)</title></rect>
                        """)
                } else {
                    marks.append(
                        """
                        <rect x="\(text: Plot.f(x))" y="\(text: Plot.f(y))" width="\(text: Plot.f(size - 1))" \
                        height="\(text: Plot.f(rowHeight - 1))" fill="#eef1f5"/>
                        """)
                }
            }
        }
        let width = left + 24 * size, height = top + Double(NewsCategory.allCases.count) * rowHeight
        return """
            <svg viewBox="0 0 \(text: Plot.f(width)) \(text: Plot.f(height))" width="100%" role="img" \
            aria-label="Open rate by category and hour of day" class="chart">\(marks)</svg>\
            <p class="also">Darker is a higher open rate (the best cell: \(text: percent(best))); hours in \
            \(text: timeZone.identifier).</p>
            """
    }

    /// Each alert's latency (first seen → accepted) at the time it was sent, over the 30 days.
    static func latencyOverTime(_ reports: [AlertReport], now: Date) -> HTML {
        let points = reports.compactMap { r in r.acceptedAt.flatMap { at in r.latency.map { (at, $0, r) } } }
        guard !points.isEmpty else { return "<p class=\"empty\">No alert was accepted in the last 30 days.</p>" }
        let plot = Plot(width: 400, height: 170)
        let span = 30 * 86400.0
        let start = now.addingTimeInterval(-span)
        let peak = max(points.map(\.1).max() ?? 1, 1)
        var marks: [HTML] = [
            plot.axes(
                xLabels: [(0, "30 days ago"), (span / 2, "15"), (span, "now")], xMax: span, yMax: peak, yUnit: "s")
        ]
        for (at, latency, report) in points {
            let p = plot.point(x: at.timeIntervalSince(start), xMax: span, y: latency, yMax: peak)
            marks.append(
                """
                <circle class="latency" cx="\(text: Plot.f(p.x))" cy="\(text: Plot.f(p.y))" r="4" fill="#d55e00">\
                <title>\(text: report.title): \(text: ReportSession.duration(latency))</title></circle>
                """)
        }
        return plot.svg(label: "Latency of each alert over the last 30 days", marks)
    }
}

/// A chart's drawing area in a fixed view box: values to coordinates, axes and ticks.
struct Plot {
    var width: Double
    var height: Double
    let left = 44.0, right = 12.0, top = 10.0, bottom = 26.0

    /// The view-box point of value (`x`, `y`) on axes up to `xMax` and `yMax`.
    func point(x: Double, xMax: Double, y: Double, yMax: Double) -> (x: Double, y: Double) {
        let w = width - left - right, h = height - top - bottom
        return (left + w * min(max(x / max(xMax, 1e-9), 0), 1), top + h * (1 - min(max(y / max(yMax, 1e-9), 0), 1)))
    }

    /// The two axes, the x ticks given and the y axis's top value.
    func axes(xLabels: [(Double, String)], xMax: Double, yMax: Double, yUnit: String) -> HTML {
        let base = height - bottom
        let ticks: [HTML] = xLabels.map { value, label in
            let x = point(x: value, xMax: xMax, y: 0, yMax: 1).x
            let anchor = value <= 0 ? "start" : value >= xMax ? "end" : "middle"
            return
                "<text x=\"\(text: Plot.f(x))\" y=\"\(text: Plot.f(base + 17))\" text-anchor=\"\(text: anchor)\" class=\"tick\">\(text: label)</text>"
        }
        let top = yMax < 10 ? String(format: "%.1f", yMax) : String(Int(yMax.rounded()))
        return """
            <line x1="\(text: Plot.f(left))" y1="\(text: Plot.f(base))" x2="\(text: Plot.f(width - right))" \
            y2="\(text: Plot.f(base))" stroke="#5b6675"/><line x1="\(text: Plot.f(left))" y1="\(text: Plot.f(self.top))" \
            x2="\(text: Plot.f(left))" y2="\(text: Plot.f(base))" stroke="#5b6675"/>\(ticks)\
            <text x="\(text: Plot.f(left - 4))" y="\(text: Plot.f(self.top + 10))" text-anchor="end" class="tick">\
            \(text: top + yUnit)</text><text x="\(text: Plot.f(left - 4))" y="\(text: Plot.f(base))" text-anchor="end" \
            class="tick">0</text>
            """
    }

    /// The chart as an image of `label`.
    func svg(label: String, _ marks: [HTML]) -> HTML {
        """
        <svg viewBox="0 0 \(text: Plot.f(width)) \(text: Plot.f(height))" width="100%" role="img" \
        aria-label="\(text: label)" class="chart">\(marks)</svg>
        """
    }

    /// A coordinate with at most one decimal.
    static func f(_ value: Double) -> String { String(format: "%.1f", value) }
}
