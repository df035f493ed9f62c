// Calls through helpers and early returns: the guard of a helper's early return reaches the
// handler's entries; a helper's value (a getter) becomes part of a guard.
@FlyMCMessage(kind = "write")
class Write {
    long epoch;
    long key;
    long value;
}

class Replica {
    @FlyMCNodeState long epoch;
    @FlyMCNodeState long lastKey;
    @FlyMCNodeState long lastValue;
    @FlyMCNodeState boolean frozen;

    long currentEpoch() {
        return epoch;
    }

    boolean stale(Write w) {
        return w.epoch < currentEpoch();
    }

    @FlyMCHandler
    void onWrite(Write w) {
        if (frozen) {
            return;
        }
        if (stale(w)) {
            return;
        }
        apply(w.key, w.value);
    }

    void apply(long k, long v) {
        lastKey = k;
        store(v);
    }

    void store(long v) {
        this.lastValue = v;
    }
}
