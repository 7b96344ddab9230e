//! The report of a calibration: per workload, the agreement of the model
//! with the measurements, next to the uncalibrated baseline and the
//! test-retest ceiling; as a table, markdown and JSON.

use super::dataset::Dataset;
use super::metrics::Agreement;
use serde::Serialize;

/// One workload's line.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Workload name.
    pub name: String,
    /// `matmul` or `softmax`.
    pub kind: String,
    /// Shape, such as `4096x4096x4096`.
    pub shape: String,
    /// Configurations measured.
    pub configs: usize,
    /// The model's agreement (held out, or of the given coefficients).
    pub model: Agreement,
    /// The uncalibrated model's agreement.
    pub baseline: Agreement,
    /// Spearman's rho between two measurement runs, where known.
    pub retest_rho: Option<f64>,
    /// The model family the workload comes from, where labelled.
    pub family: Option<String>,
}

/// The means over the workloads of one model family.
#[derive(Clone, Debug, Serialize)]
pub struct FamilyRow {
    /// The family.
    pub family: String,
    /// Its workloads.
    pub workloads: usize,
    /// Means of the model's figures.
    pub model: Means,
    /// Mean test-retest rho where known.
    pub retest_rho: Option<f64>,
}

/// Means over the rows.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Means {
    /// Mean Spearman rho.
    pub rho: f64,
    /// Mean Kendall tau.
    pub tau: f64,
    /// Mean top-1 regret.
    pub regret_top1: f64,
    /// Mean best-in-top-1 share.
    pub top1_share: f64,
    /// Mean best-in-top-4 share.
    pub top4_share: f64,
    /// Mean best-in-top-8 share.
    pub top8_share: f64,
    /// Mean share of the best among top-8 tuning's shortlist.
    pub tuned8_share: f64,
}

impl Means {
    /// The means over `a` (zeros when it is empty).
    pub fn of(a: &[Agreement]) -> Means {
        let n = a.len().max(1) as f64;
        let m = |f: fn(&Agreement) -> f64| a.iter().map(f).sum::<f64>() / n;
        Means {
            rho: m(|a| a.rho),
            tau: m(|a| a.tau),
            regret_top1: m(|a| a.regret_top1),
            top1_share: m(|a| a.top1_share),
            top4_share: m(|a| a.top4_share),
            top8_share: m(|a| a.top8_share),
            tuned8_share: m(|a| a.tuned8_share),
        }
    }
}

/// A whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The GPU the records were measured on.
    pub gpu: String,
    /// How the model's figures were obtained.
    pub method: String,
    /// One row per workload.
    pub rows: Vec<Row>,
    /// Means of the model's figures.
    pub model: Means,
    /// Means of the baseline's figures.
    pub baseline: Means,
    /// Mean test-retest rho over the rows where it is known.
    pub retest_rho: Option<f64>,
    /// Per model family, where the workloads are labelled (see
    /// [`Report::label_families`]).
    pub families: Vec<FamilyRow>,
    /// Per workload, the prediction for each sample by the fit that did not
    /// see it (cross-validation only; empty otherwise).
    #[serde(skip)]
    pub held_out_predictions: Vec<Vec<f64>>,
}

impl Report {
    /// Assembles a report from per-workload agreements (in dataset order).
    pub fn new(data: &Dataset, method: String, model: &[Agreement], baseline: &[Agreement]) -> Report {
        let rows: Vec<Row> = data
            .workloads
            .iter()
            .zip(model.iter().zip(baseline))
            .map(|(w, (m, b))| Row {
                name: w.workload.name().to_string(),
                kind: w.op.kind().name().to_string(),
                shape: w.workload.shape(),
                configs: w.samples.len(),
                model: *m,
                baseline: *b,
                retest_rho: w.retest_rho,
                family: None,
            })
            .collect();
        let retest: Vec<f64> = rows.iter().filter_map(|r| r.retest_rho).collect();
        Report {
            gpu: data.device_label(),
            method,
            model: Means::of(model),
            baseline: Means::of(baseline),
            retest_rho: (!retest.is_empty()).then(|| retest.iter().sum::<f64>() / retest.len() as f64),
            rows,
            families: Vec::new(),
            held_out_predictions: Vec::new(),
        }
    }

    /// Labels each row with its family (`family_of` by row, in dataset
    /// order) and adds the per-family means, families in name order.
    pub fn label_families(&mut self, family_of: &[Option<String>]) {
        for (r, f) in self.rows.iter_mut().zip(family_of) {
            r.family = f.clone();
        }
        let mut names: Vec<&String> = family_of.iter().flatten().collect();
        names.sort();
        names.dedup();
        self.families = names
            .into_iter()
            .map(|name| {
                let rows: Vec<&Row> = self.rows.iter().filter(|r| r.family.as_ref() == Some(name)).collect();
                let model: Vec<Agreement> = rows.iter().map(|r| r.model).collect();
                let retest: Vec<f64> = rows.iter().filter_map(|r| r.retest_rho).collect();
                FamilyRow {
                    family: name.clone(),
                    workloads: rows.len(),
                    model: Means::of(&model),
                    retest_rho: (!retest.is_empty()).then(|| retest.iter().sum::<f64>() / retest.len() as f64),
                }
            })
            .collect();
    }

    /// The JSON object of `hwwfc report --json`.
    pub fn to_json(&self) -> serde_json::Value {
        let workloads: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "name": r.name, "kind": r.kind, "shape": r.shape, "configs": r.configs,
                    "rho": r.model.rho, "tau": r.model.tau, "regret_top1": r.model.regret_top1,
                    "top1_share": r.model.top1_share, "top4_share": r.model.top4_share, "top8_share": r.model.top8_share,
                    "tuned8_share": r.model.tuned8_share,
                    "retest_rho": r.retest_rho, "baseline": r.baseline, "family": r.family,
                })
            })
            .collect();
        serde_json::json!({
            "gpu": self.gpu,
            "method": self.method,
            "mean_rho": self.model.rho,
            "mean_tau": self.model.tau,
            "mean_regret_top1": self.model.regret_top1,
            "mean_top1_share": self.model.top1_share,
            "mean_top4_share": self.model.top4_share,
            "mean_top8_share": self.model.top8_share,
            "mean_tuned8_share": self.model.tuned8_share,
            "mean_retest_rho": self.retest_rho,
            "baseline": self.baseline,
            "families": self.families,
            "workloads": workloads,
        })
    }

    /// The per-workload table, as markdown.
    pub fn table(&self) -> String {
        let mut s = String::from(
            "| workload | shape | configs | rho | tau | regret top-1 | best in top 1 / 4 / 8 | baseline rho | baseline regret | retest rho |\n\
             |---|---|---|---|---|---|---|---|---|---|\n",
        );
        let pct = |x: f64| format!("{:.1}%", x * 100.0);
        for r in &self.rows {
            s += &format!(
                "| {} | {} {} | {} | {:.3} | {:.3} | {} | {} / {} / {} | {:.3} | {} | {} |\n",
                r.name,
                r.kind,
                r.shape,
                r.configs,
                r.model.rho,
                r.model.tau,
                pct(r.model.regret_top1),
                pct(r.model.top1_share),
                pct(r.model.top4_share),
                pct(r.model.top8_share),
                r.baseline.rho,
                pct(r.baseline.regret_top1),
                r.retest_rho.map_or("-".into(), |x| format!("{x:.3}")),
            );
        }
        let m = &self.model;
        let b = &self.baseline;
        s += &format!(
            "| **mean** | | | **{:.3}** | **{:.3}** | **{}** | **{} / {} / {}** | {:.3} | {} | {} |\n",
            m.rho,
            m.tau,
            pct(m.regret_top1),
            pct(m.top1_share),
            pct(m.top4_share),
            pct(m.top8_share),
            b.rho,
            pct(b.regret_top1),
            self.retest_rho.map_or("-".into(), |x| format!("{x:.3}")),
        );
        if !self.families.is_empty() {
            s += "\nPer model family (means over its workloads; the first choice's share of the best is best in top 1):\n\n\
                  | family | workloads | rho | tau | regret top-1 | best in top 1 / 4 / 8 | retest rho |\n\
                  |---|---|---|---|---|---|---|\n";
            for f in &self.families {
                let m = &f.model;
                s += &format!(
                    "| {} | {} | {:.3} | {:.3} | {} | {} / {} / {} | {} |\n",
                    f.family,
                    f.workloads,
                    m.rho,
                    m.tau,
                    pct(m.regret_top1),
                    pct(m.top1_share),
                    pct(m.top4_share),
                    pct(m.top8_share),
                    f.retest_rho.map_or("-".into(), |x| format!("{x:.3}")),
                );
            }
        }
        s
    }
}
