//! `--plot FILE.svg`: goodput over time (from `tcpi_bytes_acked`, summed
//! over flows) of every run, one panel per condition, one colour per
//! algorithm, on a log axis so Mbit/s and Gbit/s fit one chart.

use std::path::Path;

use anyhow::anyhow;
use bbrkit_lab::runner::LabReport;
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

/// Series of (t_s, Mbit/s) for one run, flows summed.
fn series(run: &bbrkit_lab::runner::RunResult) -> Vec<(f64, f64)> {
    let n = run.flows.iter().map(|f| f.samples.len()).min().unwrap_or(0);
    let mut out = Vec::new();
    for i in 1..n {
        let (mut bytes, mut dt) = (0u64, 0.0);
        for f in &run.flows {
            let (a, b) = (&f.samples[i - 1], &f.samples[i]);
            bytes += b.bytes_acked.saturating_sub(a.bytes_acked);
            dt = b.t_s - a.t_s;
        }
        if dt > 0.0 {
            // Log axis: CUBIC's Mbit/s and BBR's Gbit/s on one chart.
            let mbps = (bytes as f64 * 8.0 / dt / 1e6).max(FLOOR_MBPS);
            out.push((run.flows[0].samples[i].t_s, mbps));
        }
    }
    out
}

/// Draws the plot into an SVG string.
pub fn render(report: &LabReport) -> anyhow::Result<String> {
    let panels = report.conditions.len().max(1);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (900, 260 * panels as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        let areas = root.split_evenly((panels, 1));
        for (area, cond) in areas.iter().zip(&report.conditions) {
            let all: Vec<Vec<(f64, f64)>> = cond
                .results
                .iter()
                .flat_map(|r| r.runs.iter().map(series))
                .collect();
            let ymax = all.iter().flatten().map(|p| p.1).fold(1.0f64, f64::max) * 1.1;
            let mut chart = ChartBuilder::on(area)
                .caption(&cond.label, ("sans-serif", 18))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..report.duration_s, (FLOOR_MBPS..ymax).log_scale())
                .map_err(|e| anyhow!("{e}"))?;
            chart
                .configure_mesh()
                .x_desc("time (s)")
                .y_desc("goodput (Mbit/s, log)")
                .draw()
                .map_err(|e| anyhow!("{e}"))?;
            for (ci, res) in cond.results.iter().enumerate() {
                let colour = COLOURS[ci % COLOURS.len()];
                for (ri, run) in res.runs.iter().enumerate() {
                    let s = chart
                        .draw_series(LineSeries::new(series(run), colour.stroke_width(2)))
                        .map_err(|e| anyhow!("{e}"))?;
                    if ri == 0 {
                        s.label(res.cc.clone()).legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                        });
                    }
                }
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|e| anyhow!("{e}"))?;
        }
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(svg)
}

/// Writes the plot to `path` atomically.
pub fn write_plot(path: &Path, report: &LabReport) -> anyhow::Result<()> {
    let svg = render(report)?;
    super::files::write_atomic(path, svg.as_bytes())
}
