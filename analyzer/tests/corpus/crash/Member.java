// try/catch with crash handling: the annotated catch block (and the method it leads to) are the
// code other members run when a peer crashes; their updates are the crash's peer update set.
import java.io.IOException;

@FlyMCMessage(kind = "heartbeat")
class Heartbeat {
    long from;
    long term;
}

class Member {
    @FlyMCNodeState long term;
    @FlyMCNodeState long leader;
    @FlyMCNodeState String role;
    @FlyMCNodeState long missed;
    Channel channel;

    @FlyMCHandler
    void onHeartbeat(Heartbeat h) {
        try {
            if (h.term >= term) {
                term = h.term;
                leader = h.from;
            }
            channel.ack(h.from);
        } catch (IOException e) {
            missed++;
        }
    }

    void follow() {
        try {
            channel.read();
        } catch (@FlyMCCrashHandling IOException e) {
            leader = -1;
            becomeCandidate();
        }
    }

    void becomeCandidate() {
        role = "CANDIDATE";
    }

    @FlyMCCrashHandling
    void onPeerLost() {
        missed = 0;
    }
}
