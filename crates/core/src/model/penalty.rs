//! The bandwidth-sharing penalty contract, and model lookup by name.

use super::{CommGraph, GigabitEthernet, InfiniBand, MaxMinFair, ModelError, Myrinet};

/// A bandwidth-sharing penalty model (bandwidth-sharing-penalty-models paper).
///
/// Contract: `penalties(g)` returns exactly one value per arc of `g`, in input order. The
/// penalty `p = T_shared / T_ref` says how many times longer the message takes than alone,
/// so a message at rate `1/(p·T_ref per byte)` finishes in `p·T_ref`. Values are finite
/// and positive for any graph (including empty graphs, multi-arcs and huge degrees); a lone
/// arc gets 1. The graph should hold no self-loops (see [`CommGraph::validate`]); if it does,
/// models treat such an arc as using its node's send and receive sides like any other arc.
/// Penalties depend only on the graph's shape, not on `bytes`.
/// Models are plain data, so they are `Send + Sync` and can be shared by engine threads.
pub trait PenaltyModel: Send + Sync {
    /// Model name, as accepted by [`penalty_model_by_name`].
    fn name(&self) -> &str;
    /// One penalty per arc, in the order of `g.edges`.
    fn penalties(&self, g: &CommGraph) -> Vec<f64>;

    /// The same values into `out` (cleared first): the replay asks once per interval, and
    /// a model may answer small graphs without allocating.
    fn penalties_into(&self, g: &CommGraph, out: &mut Vec<f64>) {
        out.clear();
        out.extend(self.penalties(g));
    }

    /// The penalty the model gives every arc of any graph whose arcs share no source and
    /// no destination, if it is one value whatever the graph (`None`: ask `penalties`).
    /// The replay keeps its ports' degrees as flows come and go and skips the model while
    /// no port is shared, as on a ring exchange.
    fn disjoint_penalty(&self) -> Option<f64> {
        None
    }
}

/// Names accepted by [`penalty_model_by_name`] (the [`ModelName`]s, in order).
pub const PENALTY_MODELS: &str = "gige, myrinet, infiniband, maxmin";

/// The penalty models: one name each, parsed and printed in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelName {
    /// Gigabit Ethernet (the bandwidth-sharing paper's model with βs, γo, γi).
    Gige,
    /// Myrinet: exact enumeration of conflict sets.
    Myrinet,
    /// InfiniBand (βe, βs, γr).
    Infiniband,
    /// Max-min fair sharing of the ports.
    Maxmin,
}

impl ModelName {
    /// Every model, in the order of [`PENALTY_MODELS`].
    pub const ALL: [ModelName; 4] = [
        ModelName::Gige,
        ModelName::Myrinet,
        ModelName::Infiniband,
        ModelName::Maxmin,
    ];

    /// The model's name in profiles, options and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelName::Gige => "gige",
            ModelName::Myrinet => "myrinet",
            ModelName::Infiniband => "infiniband",
            ModelName::Maxmin => "maxmin",
        }
    }
}

impl std::fmt::Display for ModelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ModelName {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, ModelError> {
        ModelName::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| ModelError::UnknownModel {
                name: s.to_string(),
                known: PENALTY_MODELS,
            })
    }
}

/// Builds a penalty model from its name and `(parameter, value)` pairs; parameters not given
/// keep their defaults. Parameters: gige `beta`, `gamma_o`, `gamma_i`; infiniband `beta_e`,
/// `beta_s`, `gamma_r`; myrinet `max_sets` (exact-enumeration bound, see [`Myrinet`]);
/// maxmin none. Unknown names and parameters are errors that name them.
pub fn penalty_model_by_name(
    name: &str,
    params: &[(String, f64)],
) -> Result<Box<dyn PenaltyModel>, String> {
    build(name, params).map_err(|e| e.to_string())
}

fn build(name: &str, params: &[(String, f64)]) -> Result<Box<dyn PenaltyModel>, ModelError> {
    let unknown = |p: &str, known: &'static str| ModelError::UnknownParam {
        model: name.to_string(),
        name: p.to_string(),
        known,
    };
    match name.parse::<ModelName>()? {
        ModelName::Gige => {
            let mut m = GigabitEthernet::default();
            for (p, v) in params {
                match p.as_str() {
                    "beta" => m.beta = *v,
                    "gamma_o" => m.gamma_o = *v,
                    "gamma_i" => m.gamma_i = *v,
                    _ => return Err(unknown(p, "beta, gamma_o, gamma_i")),
                }
            }
            Ok(Box::new(GigabitEthernet::new(
                m.beta, m.gamma_o, m.gamma_i,
            )?))
        }
        ModelName::Infiniband => {
            let mut m = InfiniBand::default();
            for (p, v) in params {
                match p.as_str() {
                    "beta_e" => m.beta_e = *v,
                    "beta_s" => m.beta_s = *v,
                    "gamma_r" => m.gamma_r = *v,
                    _ => return Err(unknown(p, "beta_e, beta_s, gamma_r")),
                }
            }
            Ok(Box::new(InfiniBand::new(m.beta_e, m.beta_s, m.gamma_r)?))
        }
        ModelName::Myrinet => {
            let mut m = Myrinet::default();
            for (p, v) in params {
                match p.as_str() {
                    "max_sets" => {
                        if !(v.is_finite() && *v >= 1.0) {
                            return Err(ModelError::BadParam {
                                name: p.clone(),
                                value: *v,
                                why: "must be a finite number >= 1",
                            });
                        }
                        m.max_sets = *v as u64;
                    }
                    _ => return Err(unknown(p, "max_sets")),
                }
            }
            Ok(Box::new(m))
        }
        ModelName::Maxmin => match params.first() {
            Some((p, _)) => Err(unknown(p, "(none)")),
            None => Ok(Box::new(MaxMinFair)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup() {
        for m in ModelName::ALL {
            assert_eq!(
                penalty_model_by_name(m.as_str(), &[]).unwrap().name(),
                m.as_str()
            );
            assert_eq!(m.as_str().parse::<ModelName>().unwrap(), m);
        }
        let names: Vec<&str> = ModelName::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(names.join(", "), PENALTY_MODELS);
        let e = penalty_model_by_name("token-ring", &[]).err().unwrap();
        assert!(e.contains("token-ring"), "{e}");
        let e = penalty_model_by_name("gige", &[("gamma".into(), 1.0)])
            .err()
            .unwrap();
        assert!(e.contains("gamma"), "{e}");
        let e = penalty_model_by_name("gige", &[("beta".into(), -1.0)])
            .err()
            .unwrap();
        assert!(e.contains("beta"), "{e}");
    }
}
