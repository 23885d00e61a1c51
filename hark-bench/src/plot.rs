//! `--plot`: the latency distributions as cumulative curves in an SVG file, and for
//! `--find-capacity` time to final against concurrent calls.

use std::path::Path;

use plotters::prelude::*;

/// Draws one cumulative-distribution curve per series (name, values in ms).
pub fn cdf_svg<S: AsRef<str>>(
    path: &Path,
    title: &str,
    series: &[(S, Vec<f64>)],
) -> anyhow::Result<()> {
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(100.0_f64, f64::max)
        * 1.05;
    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..max, 0.0..1.0)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("milliseconds")
        .y_desc("fraction of utterances")
        .draw()
        .map_err(plot_err)?;
    for (i, (name, values)) in series.iter().enumerate() {
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len().max(1) as f64;
        let color = Palette99::pick(i).to_rgba();
        let points = sorted
            .iter()
            .enumerate()
            .map(|(k, v)| (*v, (k + 1) as f64 / n));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(plot_err)?
            .label(format!("{} (n={})", name.as_ref(), sorted.len()))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// Draws one line per series of (concurrent calls, ms) points, and the threshold.
pub fn capacity_svg(
    path: &Path,
    title: &str,
    series: &[(String, Vec<(f64, f64)>)],
    threshold_ms: f64,
) -> anyhow::Result<()> {
    let points = || series.iter().flat_map(|(_, p)| p.iter().copied());
    let max_x = points().map(|p| p.0).fold(1.0_f64, f64::max) + 0.5;
    let max_y = points().map(|p| p.1).fold(threshold_ms, f64::max) * 1.1;
    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.5..max_x, 0.0..max_y)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("concurrent calls")
        .y_desc("time to final, ms")
        .draw()
        .map_err(plot_err)?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(plot_err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
            .map_err(plot_err)?;
    }
    chart
        .draw_series(LineSeries::new(
            [(0.5, threshold_ms), (max_x, threshold_ms)],
            RED.mix(0.5),
        ))
        .map_err(plot_err)?
        .label(format!("--max-p95-ms {threshold_ms:.0}"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.mix(0.5)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("cannot draw plot: {e}")
}
