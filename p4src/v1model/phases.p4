/*
 * v1model/phases.p4 -- the phase steps of the replay service
 * (include/replay_service.p4) on v1model, where a request takes all its
 * state stages in one egress pass: there is no next phase to plan, nothing
 * to carry into one, and no loop header to flag (tna/phases.p4 and
 * tna/loop.p4 have TNA's, with the same signatures).
 */
#ifndef REPLAY_V1MODEL_PHASES_P4
#define REPLAY_V1MODEL_PHASES_P4

control PhasePlan(in headers_t hdr, inout metadata_t meta) {
    apply { }
}

control PhaseCarry(inout headers_t hdr, in metadata_t meta) {
    apply { }
}

control LoopFlags(in headers_t hdr, inout metadata_t meta) {
    apply { }
}

/* A SAMPLE reply on an unwritten slot (RecordCheck) ends with this pass,
 * the only one. */
control ReadEnds(inout metadata_t meta) {
    apply { }
}

#endif
