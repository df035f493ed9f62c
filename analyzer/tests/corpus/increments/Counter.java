// Increment-only updates (x++, x += 1, x = x + 1, AtomicLong.incrementAndGet) are marked; any
// other update of the same variable on a path makes it a plain update.
import java.util.concurrent.atomic.AtomicLong;

@FlyMCMessage(kind_field = "op")
class Op {
    static final int INC = 1;
    static final int ADD = 2;
    static final int RESET = 3;
    int op;
    long amount;
}

class Counter {
    @FlyMCNodeState long hits;
    @FlyMCNodeState long total;
    @FlyMCNodeState AtomicLong acks;

    @FlyMCHandler
    void onOp(Op o) {
        switch (o.op) {
        case Op.INC:
            hits++;
            total += 1;
            acks.incrementAndGet();
            break;
        case Op.ADD:
            total = total + 1;
            total += o.amount;
            break;
        case Op.RESET:
            hits = 0;
            break;
        default:
            break;
        }
    }
}
