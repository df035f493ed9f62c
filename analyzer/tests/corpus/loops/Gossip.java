// Sends inside loops, and loops that update state: the send set holds the node state that flows
// into the messages sent to every peer.
import java.util.List;

@FlyMCMessage(kind = "rumor")
class Rumor {
    long round;
    long payload;
}

class Gossip {
    @FlyMCNodeState long round;
    @FlyMCNodeState long best;
    @FlyMCNodeState long unrelated;
    @FlyMCNodeState List<Long> seen;
    List<Peer> peers;
    Network net;

    @FlyMCHandler
    void onRumor(Rumor r) {
        if (r.round <= round) {
            return;
        }
        round = r.round;
        seen.add(r.payload);
        for (Peer p : peers) {
            net.send(p, new Rumor(round, best));
        }
        int i = 0;
        while (i < 3) {
            i++;
        }
    }
}
