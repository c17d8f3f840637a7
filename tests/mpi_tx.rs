//! Transparency battery: programs exercising MPI corner cases print the same results and
//! exit the same way with and without the layer, and the records are exact.

mod common;
mod reliability;
use common::*;
use reliability::*;

#[test]
fn in_place_collectives() {
    let p = run_pair("tx_inplace", 4, &[]);
    let rows = read_calls(&p.out);
    let bytes = |rank, call| {
        cols(
            &rows_of(&rows, rank, call),
            &["bytes_sent", "bytes_received"],
        )
    };
    let one = |a: &str, b: &str| vec![vec![a.to_string(), b.to_string()]];
    // In place, a call records the bytes of the equivalent out-of-place call: MPI ignores
    // the send count and type (0 and MPI_DATATYPE_NULL here).
    for r in 0..4 {
        assert_eq!(bytes(r, "MPI_Allreduce"), one("12", "12"), "rank {r}");
        assert_eq!(bytes(r, "MPI_Allgather"), one("8", "32"), "rank {r}");
        assert_eq!(bytes(r, "MPI_Alltoall"), one("16", "16"), "rank {r}");
    }
    assert_eq!(bytes(1, "MPI_Reduce"), one("8", "8"));
    assert_eq!(bytes(0, "MPI_Reduce"), one("8", "0"));
    assert_eq!(bytes(2, "MPI_Gather")[0], ["8", "32"]);
    assert_eq!(bytes(3, "MPI_Gather")[0], ["8", "0"]);
    assert_eq!(bytes(3, "MPI_Scatter"), one("32", "8"));
    assert_eq!(bytes(0, "MPI_Scatter"), one("0", "8"));
    let roots: Vec<String> = rows_of(&rows, 0, "MPI_Scatter")
        .iter()
        .map(|r| r["root"].clone())
        .collect();
    assert_eq!(roots, ["3"]);
}

#[test]
fn proc_null_peers_move_nothing() {
    let p = run_pair("tx_procnull", 2, &[]);
    let rows = read_calls(&p.out);
    for rank in 0..2 {
        for (call, tag) in [
            ("MPI_Send", "5"),
            ("MPI_Recv", "6"),
            ("MPI_Isend", "7"),
            ("MPI_Irecv", "8"),
        ] {
            assert_eq!(
                cols(&rows_of(&rows, rank, call), &["peer", "bytes", "tag"]),
                [["PROC_NULL", "0", tag]],
                "rank {rank} {call}"
            );
        }
        let sr = rows_of(&rows, rank, "MPI_Sendrecv");
        // The second Sendrecv has PROC_NULL at both ends.
        assert_eq!(
            cols(&sr[1..], &["peer", "source", "bytes"]),
            [["PROC_NULL", "PROC_NULL", "0"]]
        );
    }
    // Open chain: rank 0 only sends right, rank 1 only receives from the left.
    let sr0 = rows_of(&rows, 0, "MPI_Sendrecv");
    assert_eq!(
        cols(
            &sr0[..1],
            &["peer", "source", "bytes_sent", "bytes_received"]
        ),
        [["1", "PROC_NULL", "4", "0"]]
    );
    let sr1 = rows_of(&rows, 1, "MPI_Sendrecv");
    assert_eq!(
        cols(
            &sr1[..1],
            &["peer", "source", "bytes_sent", "bytes_received"]
        ),
        [["PROC_NULL", "0", "0", "4"]]
    );
}

#[test]
fn any_source_any_tag_record_the_match() {
    let p = run_pair("tx_anysrc", 4, &[]);
    let rows = read_calls(&p.out);
    let mut got = cols(&rows_of(&rows, 0, "MPI_Recv"), &["peer", "tag", "bytes"]);
    got.sort();
    // Blocking ANY_SOURCE/ANY_TAG receives (3k ints, tag 50+k) and the receives after
    // MPI_Probe (k+1 doubles, tag 60+k).
    let mut want: Vec<Vec<String>> = (1..4)
        .flat_map(|k: u32| {
            [
                vec![k.to_string(), (50 + k).to_string(), (12 * k).to_string()],
                vec![
                    k.to_string(),
                    (60 + k).to_string(),
                    (8 * (k + 1)).to_string(),
                ],
            ]
        })
        .collect();
    want.sort();
    assert_eq!(got, want);
    let mut probes = cols(&rows_of(&rows, 0, "MPI_Probe"), &["peer", "tag", "bytes"]);
    probes.sort();
    assert_eq!(
        probes,
        [["1", "61", "0"], ["2", "62", "0"], ["3", "63", "0"]]
    );
    let mut nb = cols(&rows_of(&rows, 0, "MPI_Irecv"), &["peer", "tag", "bytes"]);
    nb.sort();
    assert_eq!(nb, [["1", "71", "5"], ["2", "72", "10"], ["3", "73", "15"]]);
}

#[test]
fn derived_datatypes_and_zero_counts() {
    let p = run_pair("tx_dtypes", 2, &[]);
    let rows = read_calls(&p.out);
    // Data bytes, not extents: a column of 8 doubles is 64 bytes; 2 x 3 structs of
    // (double, int, char) are 6 x 13 = 78 bytes.
    assert_eq!(
        cols(&rows_of(&rows, 0, "MPI_Send"), &["peer", "tag", "bytes"]),
        [
            ["1", "1", "64"],
            ["1", "2", "78"],
            ["1", "3", "0"],
            ["1", "6", "8192"],
            ["1", "7", "8192"],
            ["1", "8", "8192"]
        ]
    );
    assert_eq!(
        cols(&rows_of(&rows, 1, "MPI_Recv"), &["peer", "tag", "bytes"]),
        [
            ["0", "1", "64"],
            ["0", "2", "78"],
            ["0", "3", "0"],
            ["0", "6", "8192"],
            ["0", "7", "8192"],
            ["0", "8", "8192"],
            ["0", "9", "8192"]
        ]
    );
    // The spool flags the sends of the strided block, blocking and not, and no other
    // (the column is below the size the layer checks; the contiguous type is contiguous).
    let run = pmpi_core::trace::load_run(&p.out).unwrap();
    let mut packed: Vec<(u16, i32)> = run
        .ranks
        .iter()
        .flat_map(|rk| rk.records.iter())
        .filter(|r| r.flags & pmpi_core::trace::FLAG_PACKED != 0)
        .map(|r| (r.call, r.tag))
        .collect();
    packed.sort();
    use pmpi_core::trace::call;
    assert_eq!(packed, [(call::MPI_Send, 6), (call::MPI_Isend, 9)]);
    assert_eq!(
        cols(&rows_of(&rows, 1, "MPI_Irecv"), &["peer", "tag", "bytes"]),
        [["0", "4", "0"]]
    );
    for r in 0..2 {
        assert_eq!(cols(&rows_of(&rows, r, "MPI_Bcast"), &["bytes"]), [["0"]]);
    }
}

#[test]
fn sub_communicators_translate_to_world_ranks() {
    let p = run_pair("tx_comms", 4, &[]);
    let rows = read_calls(&p.out);
    for r in 0..4u32 {
        // Column of the 2x2 grid (cart_sub): the peer is WORLD rank ^ 2.
        let col: Vec<_> = rows
            .iter()
            .filter(|x| x["rank"] == r.to_string() && x["tag"] == "61")
            .collect();
        assert_eq!(col.len(), 2, "rank {r}");
        for x in &col {
            assert_eq!(x["peer"], (r ^ 2).to_string(), "rank {r} {}", x["call"]);
            assert_eq!(x["comm_size"], "2");
        }
        // Row broadcast from local root 1 = the WORLD rank in column 1 of this row.
        let bc = rows_of(&rows, r, "MPI_Bcast");
        assert_eq!(bc[0]["root"], (r | 1).to_string(), "rank {r}");
        // Row exchange with ANY_SOURCE: the peer is WORLD rank ^ 1.
        assert_eq!(
            cols(&rows_of(&rows, r, "MPI_Irecv"), &["peer", "tag"]),
            [[(r ^ 1).to_string(), "63".to_string()]]
        );
        // Duplicate of WORLD: ring.
        let sr = rows_of(&rows, r, "MPI_Sendrecv");
        assert_eq!(
            cols(&sr, &["peer", "source", "comm_size"]),
            [[
                ((r + 1) % 4).to_string(),
                ((r + 3) % 4).to_string(),
                "4".to_string()
            ]]
        );
    }
}

#[test]
fn sends_never_completed_are_recorded_at_finalize() {
    let p = run_pair("tx_unfinished", 2, &[]);
    let rows = read_calls(&p.out);
    // The three sends rank 0 never tested are in the trace (incomplete at MPI_Finalize),
    // so rank 1's receives match them and every row is predicted.
    let mut sends = cols(&rows_of(&rows, 0, "MPI_Isend"), &["peer", "tag", "bytes"]);
    sends.sort();
    assert_eq!(
        sends,
        [
            ["1", "40", "2048"],
            ["1", "41", "2048"],
            ["1", "42", "2048"]
        ]
    );
    assert_eq!(rows_of(&rows, 1, "MPI_Recv").len(), 3);
    assert!(
        rows.iter().all(|r| r["reason"].is_empty()),
        "{:?}",
        rows.iter()
            .filter(|r| !r["reason"].is_empty())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        summary(&p.out)["prediction"]["not_predicted"],
        serde_json::json!({})
    );
}

#[test]
fn request_arrays_with_inactive_entries() {
    let p = run_pair("tx_requests", 2, &[]);
    let rows = read_calls(&p.out);
    // Three live receives per phase, six phases: every one completed with its real source,
    // tag and size, whichever completion call finished it.
    for rank in 0..2u32 {
        let mut got = cols(
            &rows_of(&rows, rank, "MPI_Irecv"),
            &["peer", "tag", "bytes"],
        );
        got.sort();
        let mut want: Vec<Vec<String>> = (0..6)
            .flat_map(|ph| {
                [0, 2, 4].map(|i| {
                    vec![
                        (1 - rank).to_string(),
                        (10 * ph + i).to_string(),
                        (4 * (i + 1)).to_string(),
                    ]
                })
            })
            .collect();
        want.sort();
        assert_eq!(got, want, "rank {rank}");
        // Waitall: phase 0 and the two all-inactive calls at the end.
        assert_eq!(rows_of(&rows, rank, "MPI_Waitall").len(), 3);
    }
}
