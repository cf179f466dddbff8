//! The `--plot` SVG: throughput, cwnd and smoothed RTT over time, one line
//! per flow (and per condition when several are run), in three panels.

use plotters::prelude::*;

use bbrkit_sim::TraceRow;

/// Most points kept per series (older ones are thinned, not the run).
const MAX_POINTS: usize = 4000;

/// One line on the plot.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// (time s, throughput Mbit/s).
    pub throughput: Vec<(f64, f64)>,
    /// (time s, cwnd packets).
    pub cwnd: Vec<(f64, f64)>,
    /// (time s, srtt ms).
    pub rtt: Vec<(f64, f64)>,
    stride: usize,
    seen: usize,
}

impl Series {
    /// A series expecting about `expected` samples (thinned to `MAX_POINTS`).
    pub fn new(label: String, expected: usize) -> Self {
        Series {
            label,
            stride: expected.div_ceil(MAX_POINTS).max(1),
            ..Series::default()
        }
    }

    /// Adds a sample (keeps every `stride`-th).
    pub fn push(&mut self, r: &TraceRow) {
        self.seen += 1;
        if !(self.seen - 1).is_multiple_of(self.stride) {
            return;
        }
        self.throughput.push((r.time_s, r.throughput_bps / 1e6));
        self.cwnd.push((r.time_s, f64::from(r.cwnd_pkts)));
        if r.srtt_ms > 0.0 {
            // No RTT sample yet: nothing to draw.
            self.rtt.push((r.time_s, r.srtt_ms));
        }
    }
}

fn max_of(series: &[Series], pick: fn(&Series) -> &Vec<(f64, f64)>) -> f64 {
    series
        .iter()
        .flat_map(|s| pick(s).iter().map(|p| p.1))
        .fold(0.0, f64::max)
}

/// Renders the three panels to an SVG document.
pub fn render(title: &str, duration_s: f64, series: &[Series]) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, 1000)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| anyhow::anyhow!("plot: {e:?}"))?;
        let (top, rest) = root.split_vertically(30);
        top.draw_text(title, &("sans-serif", 18).into_text_style(&top), (10, 6))
            .map_err(|e| anyhow::anyhow!("plot: {e:?}"))?;
        let panels = rest.split_evenly((3, 1));
        type Pick = fn(&Series) -> &Vec<(f64, f64)>;
        let specs: [(&str, &str, Pick); 3] = [
            ("Throughput", "Mbit/s", |s| &s.throughput),
            ("Congestion window", "packets", |s| &s.cwnd),
            ("Smoothed RTT", "ms", |s| &s.rtt),
        ];
        for (area, (name, unit, pick)) in panels.iter().zip(specs) {
            let ymax = (max_of(series, pick) * 1.1).max(1.0);
            let mut chart = ChartBuilder::on(area)
                .caption(name, ("sans-serif", 16))
                .margin(8)
                .x_label_area_size(30)
                .y_label_area_size(60)
                .build_cartesian_2d(0f64..duration_s.max(1e-3), 0f64..ymax)
                .map_err(|e| anyhow::anyhow!("plot: {e:?}"))?;
            chart
                .configure_mesh()
                .x_desc("time (s)")
                .y_desc(unit)
                .draw()
                .map_err(|e| anyhow::anyhow!("plot: {e:?}"))?;
            for (i, s) in series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(
                        pick(s).iter().copied(),
                        color.stroke_width(1),
                    ))
                    .map_err(|e| anyhow::anyhow!("plot: {e:?}"))?
                    .label(s.label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(|e| anyhow::anyhow!("plot: {e:?}"))?;
        }
        root.present().map_err(|e| anyhow::anyhow!("plot: {e:?}"))?;
    }
    Ok(svg)
}
