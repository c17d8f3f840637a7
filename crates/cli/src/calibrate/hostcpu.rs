//! The hosts' interrupt time per byte sent between nodes, over a phase of `calibrate`
//! that moves a known number of bytes: each rank reads its machine's CPU time
//! (`/proc/stat`) before and after, and rank 0 adds up each machine once (ranks of
//! several node names on one machine, an emulated cluster, share one reading).

use super::mpi::Mpi;
use crate::profile::HostCost;
use crate::trace::{CpuTicks, per_machine, read_boot_id};

/// One rank's readings, as exchanged: its boot id (the machine), and its CPU time before
/// and after the phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub machine: String,
    pub before: CpuTicks,
    pub after: CpuTicks,
}

const ID: usize = 48;
const WIRE: usize = ID + 6 * 8;

fn encode(r: Option<&Reading>) -> [u8; WIRE] {
    let mut b = [0u8; WIRE];
    let Some(r) = r else {
        return b;
    };
    let id = r.machine.as_bytes();
    let n = id.len().min(ID - 1);
    b[0] = 1;
    b[1..1 + n].copy_from_slice(&id[..n]);
    let v = [
        r.before.total,
        r.before.irq,
        u64::from(r.before.cpus),
        r.after.total,
        r.after.irq,
        u64::from(r.after.cpus),
    ];
    for (k, x) in v.iter().enumerate() {
        b[ID + 8 * k..ID + 8 * k + 8].copy_from_slice(&x.to_le_bytes());
    }
    b
}

fn decode(b: &[u8]) -> Option<Reading> {
    if b.len() < WIRE || b[0] != 1 {
        return None;
    }
    let id = &b[1..ID];
    let end = id.iter().position(|&c| c == 0).unwrap_or(id.len());
    let x = |k: usize| u64::from_le_bytes(b[ID + 8 * k..ID + 8 * k + 8].try_into().unwrap());
    let t = |k: usize| CpuTicks {
        total: x(k),
        irq: x(k + 1),
        cpus: x(k + 2) as u32,
    };
    Some(Reading {
        machine: String::from_utf8_lossy(&id[..end]).into_owned(),
        before: t(0),
        after: t(3),
    })
}

/// Seconds of interrupt time over `wall` seconds, each machine counted once (its first
/// reading): a machine's ticks over all its CPUs are its CPUs × `wall` × the tick rate,
/// which converts its interrupt ticks to seconds without asking the kernel for the rate.
pub fn irq_seconds(readings: &[Reading], wall: f64) -> Option<f64> {
    let machines = per_machine(
        readings
            .iter()
            .map(|r| (r.machine.as_str(), r.before, r.after)),
    );
    if machines.is_empty() || machines.iter().any(|d| d.total == 0 || d.cpus == 0) {
        return None;
    }
    Some(
        machines
            .iter()
            .map(|d| d.irq as f64 / d.total as f64 * f64::from(d.cpus) * wall)
            .sum(),
    )
}

/// Every rank's reading gathered (collective over the world); rank 0 gets the cost of the
/// `bytes` sent between nodes over `wall` seconds, the others None.
pub fn cost(mpi: &Mpi, mine: Option<Reading>, bytes: u64, wall: f64) -> Option<HostCost> {
    let all = mpi.allgather_bytes(&encode(mine.as_ref()), mpi.world, mpi.size as usize);
    if mpi.rank != 0 || bytes == 0 {
        return None;
    }
    let readings: Vec<Reading> = all.chunks(WIRE).filter_map(decode).collect();
    if readings.len() != mpi.size as usize {
        return None;
    }
    let s = irq_seconds(&readings, wall)?;
    Some(HostCost {
        irq_s_per_byte: s / bytes as f64,
        bytes,
    })
}

/// This rank's machine: its boot id, else its node name.
pub fn machine(node: &str) -> String {
    let id = read_boot_id();
    if id.is_empty() { node.to_string() } else { id }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(machine: &str, before: (u64, u64), after: (u64, u64)) -> Reading {
        let t = |(total, irq)| CpuTicks {
            total,
            irq,
            cpus: 2,
        };
        Reading {
            machine: machine.into(),
            before: t(before),
            after: t(after),
        }
    }

    #[test]
    fn a_reading_crosses_the_wire_whole() {
        let a = r("0f3c-ab", (10, 2), (400, 30));
        assert_eq!(decode(&encode(Some(&a))), Some(a));
        assert_eq!(decode(&encode(None)), None);
    }

    #[test]
    fn each_machine_s_interrupts_count_once_in_seconds() {
        // Machine A (two ranks: one emulated cluster) spent 20 of its 200 ticks in
        // interrupts over 1 s on 2 CPUs: 0.2 s; machine B 10 of 200: 0.1 s.
        let v = [
            r("A", (0, 0), (200, 20)),
            r("A", (5, 0), (205, 90)),
            r("B", (0, 0), (200, 10)),
        ];
        let s = irq_seconds(&v, 1.0).unwrap();
        assert!((s - 0.3).abs() < 1e-12, "{s}");
        // No time passed on a machine: no figure.
        assert_eq!(irq_seconds(&[r("A", (5, 0), (5, 0))], 1.0), None);
        assert_eq!(irq_seconds(&[], 1.0), None);
    }
}
