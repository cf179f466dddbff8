//! `--plot FILE.svg`, one panel per condition, one colour per algorithm:
//! - each algorithm alone: goodput over time (from `tcpi_bytes_acked`,
//!   summed over flows) of every run, on a log axis so Mbit/s and Gbit/s
//!   fit one chart;
//! - `--compete`: each algorithm's share of the goodput over time;
//! - `--workload`: the flow completion time CDF of each algorithm.

use anyhow::anyhow;
use bbrkit_lab::experiment::Report;
use bbrkit_lab::tcpinfo::TcpSample;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// Lowest value on the log axis, Mbit/s.
const FLOOR_MBPS: f64 = 0.1;

/// One line: its legend (shown once per colour) and points.
struct Line {
    colour: usize,
    legend: Option<String>,
    points: Vec<(f64, f64)>,
}

/// One panel of the chart.
struct Panel {
    title: String,
    lines: Vec<Line>,
}

/// The axes every panel shares.
struct Axes {
    x_desc: &'static str,
    y_desc: &'static str,
    log_y: bool,
}

/// Draws the plot of any report into an SVG string.
pub fn render(report: &Report) -> anyhow::Result<String> {
    match report {
        Report::Alone(r) => {
            let panels: Vec<Panel> = r
                .conditions
                .iter()
                .map(|c| Panel {
                    title: c.label.clone(),
                    lines: c
                        .results
                        .iter()
                        .enumerate()
                        .flat_map(|(ci, res)| {
                            res.runs.iter().enumerate().map(move |(ri, run)| Line {
                                colour: ci,
                                legend: (ri == 0).then(|| res.cc.clone()),
                                points: goodput(run.flows.iter().map(|f| f.samples.as_slice())),
                            })
                        })
                        .collect(),
                })
                .collect();
            let axes = Axes {
                x_desc: "time (s)",
                y_desc: "goodput (Mbit/s, log)",
                log_y: true,
            };
            draw(&panels, &axes)
        }
        Report::Compete(r) => draw(
            &compete_panels(r),
            &Axes {
                x_desc: "time (s)",
                y_desc: "share of goodput",
                log_y: false,
            },
        ),
        Report::Workload(r) => draw(
            &workload_panels(r),
            &Axes {
                x_desc: "flow completion time (ms)",
                y_desc: "fraction of requests",
                log_y: false,
            },
        ),
        Report::Commands(_) | Report::Hold(_) => {
            anyhow::bail!("--plot draws bbrkit's own traffic, not --server-cmd/--client-cmd")
        }
    }
}

/// Per condition, each algorithm's share over time in every run.
fn compete_panels(r: &bbrkit_lab::compete::CompeteReport) -> Vec<Panel> {
    r.conditions
        .iter()
        .map(|c| {
            let mut lines = Vec::new();
            for run in r.runs.iter().filter(|x| x.label == c.label) {
                let per: Vec<Vec<(f64, f64)>> = c
                    .algorithms
                    .iter()
                    .map(|a| {
                        goodput(
                            run.flows
                                .iter()
                                .filter(|f| f.cc == a.cc)
                                .map(|f| f.samples.as_slice()),
                        )
                    })
                    .collect();
                let n = per.iter().map(Vec::len).min().unwrap_or(0);
                for (ai, a) in c.algorithms.iter().enumerate() {
                    let points = (0..n)
                        .filter_map(|i| {
                            let total: f64 = per.iter().map(|p| p[i].1).sum();
                            (total > 0.0).then(|| (per[ai][i].0, per[ai][i].1 / total))
                        })
                        .collect();
                    lines.push(Line {
                        colour: ai,
                        legend: (run.run == 1).then(|| a.cc.clone()),
                        points,
                    });
                }
            }
            Panel {
                title: c.label.clone(),
                lines,
            }
        })
        .collect()
}

/// Per condition, the FCT CDF of each algorithm (every request, pooled).
fn workload_panels(r: &bbrkit_lab::workload::WorkloadReport) -> Vec<Panel> {
    r.conditions
        .iter()
        .map(|c| Panel {
            title: c.label.clone(),
            lines: c
                .results
                .iter()
                .enumerate()
                .map(|(ai, res)| {
                    let mut ms: Vec<f64> = res
                        .runs
                        .iter()
                        .flat_map(|x| x.fct.iter().map(|f| f.1))
                        .collect();
                    ms.sort_by(f64::total_cmp);
                    let n = ms.len() as f64;
                    Line {
                        colour: ai,
                        legend: Some(res.cc.clone()),
                        points: ms
                            .iter()
                            .enumerate()
                            .map(|(i, &v)| (v, (i + 1) as f64 / n))
                            .collect(),
                    }
                })
                .collect(),
        })
        .collect()
}

/// (t_s, Mbit/s) of some flows' samples, summed over the flows.
fn goodput<'a>(flows: impl Iterator<Item = &'a [TcpSample]>) -> Vec<(f64, f64)> {
    let flows: Vec<&[TcpSample]> = flows.collect();
    let n = flows.iter().map(|f| f.len()).min().unwrap_or(0);
    let mut out = Vec::new();
    for i in 1..n {
        let (mut bytes, mut dt) = (0u64, 0.0);
        for f in &flows {
            let (a, b) = (&f[i - 1], &f[i]);
            bytes += b.bytes_acked.saturating_sub(a.bytes_acked);
            dt = b.t_s - a.t_s;
        }
        if dt > 0.0 {
            // Log axis: CUBIC's Mbit/s and BBR's Gbit/s on one chart.
            let mbps = (bytes as f64 * 8.0 / dt / 1e6).max(FLOOR_MBPS);
            out.push((flows[0][i].t_s, mbps));
        }
    }
    out
}

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("plot: {e}")
}

/// Draws `panels`, one above the other.
fn draw(panels: &[Panel], axes: &Axes) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 260 * panels.len().max(1) as u32))
            .into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let areas = root.split_evenly((panels.len().max(1), 1));
        for (area, panel) in areas.iter().zip(panels) {
            let pts = || panel.lines.iter().flat_map(|l| l.points.iter());
            let xmax = pts().map(|p| p.0).fold(1e-3f64, f64::max);
            let ymax = pts().map(|p| p.1).fold(1.0f64, f64::max) * 1.1;
            let mut builder = ChartBuilder::on(area);
            builder
                .caption(&panel.title, ("sans-serif", 18))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(60);
            if axes.log_y {
                let y = (FLOOR_MBPS..ymax).log_scale();
                let mut chart = builder.build_cartesian_2d(0.0..xmax, y).map_err(err)?;
                lines(&mut chart, panel, axes)?;
            } else {
                let mut chart = builder
                    .build_cartesian_2d(0.0..xmax, 0.0..ymax)
                    .map_err(err)?;
                lines(&mut chart, panel, axes)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Draws the axes, the panel's lines and their legend on `chart`.
fn lines<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    panel: &Panel,
    axes: &Axes,
) -> anyhow::Result<()>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .draw()
        .map_err(err)?;
    for line in &panel.lines {
        let colour = COLOURS[line.colour % COLOURS.len()];
        let s = chart
            .draw_series(LineSeries::new(
                line.points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(err)?;
        if let Some(legend) = &line.legend {
            s.label(legend.clone()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    Ok(())
}
