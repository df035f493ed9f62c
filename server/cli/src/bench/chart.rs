//! Log-scale grouped bar charts (FlyMC Figures 1 and 8) as SVG.

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use super::Entry;

pub fn bars(
    file: &Path,
    title: &str,
    entries: &[Entry],
    cap: u64,
    _exhaustion: bool,
) -> Result<()> {
    let mut svg = String::new();
    draw(&mut svg, title, entries, cap).map_err(|e| anyhow!("drawing {}: {e}", file.display()))?;
    flymc_core::outfile::write_atomically(file, svg.as_bytes())
        .map_err(|e| anyhow!("cannot write {}: {e}", file.display()))
}

/// The chart as SVG text, drawn into `svg` (written out whole, as every output is).
fn draw(svg: &mut String, title: &str, entries: &[Entry], cap: u64) -> Result<()> {
    let mut workloads: Vec<&str> = Vec::new();
    let mut strategies: Vec<&str> = Vec::new();
    for e in entries {
        if !workloads.contains(&e.workload.as_str()) {
            workloads.push(&e.workload);
        }
        if !strategies.contains(&e.strategy.as_str()) {
            strategies.push(&e.strategy);
        }
    }
    let width = (120 + workloads.len() * (strategies.len() * 14 + 30)).max(640) as u32;
    let root = SVGBackend::with_string(svg, (width, 460)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| anyhow!("{e}");
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let top = (cap as f64 * 3.0).max(10.0);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..workloads.len().max(1) as f64, (1f64..top).log_scale())
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("paths")
        .draw()
        .map_err(|e| err(&e))?;
    let slot = 0.85 / strategies.len().max(1) as f64;
    for (si, s) in strategies.iter().enumerate() {
        let color = Palette99::pick(si).to_rgba();
        let bars: Vec<_> = workloads
            .iter()
            .enumerate()
            .filter_map(|(wi, w)| {
                let e = entries
                    .iter()
                    .find(|e| e.workload == *w && e.strategy == *s)?;
                let x0 = wi as f64 + 0.075 + si as f64 * slot;
                Some(Rectangle::new(
                    [(x0, 1.0), (x0 + slot * 0.9, e.paths.max(1.0))],
                    color.filled(),
                ))
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(|e| err(&e))?
            .label(*s)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
        // Mark capped results, as the paper's up-arrows.
        let marks: Vec<_> = workloads
            .iter()
            .enumerate()
            .filter_map(|(wi, w)| {
                let e = entries
                    .iter()
                    .find(|e| e.workload == *w && e.strategy == *s)?;
                (e.reached < e.runs).then(|| {
                    let x = wi as f64 + 0.075 + si as f64 * slot;
                    Text::new("^", (x, e.paths.max(1.0) * 1.6), ("sans-serif", 12))
                })
            })
            .collect();
        chart.draw_series(marks).map_err(|e| err(&e))?;
    }
    let labels: Vec<_> = workloads
        .iter()
        .enumerate()
        .map(|(wi, w)| Text::new(w.to_string(), (wi as f64 + 0.3, 1.0), ("sans-serif", 13)))
        .collect();
    chart.draw_series(labels).map_err(|e| err(&e))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
