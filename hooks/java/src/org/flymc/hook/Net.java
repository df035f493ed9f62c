package org.flymc.hook;

import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The hook protocol over the JDK's HTTP client (hooks/PROTOCOL.md): one client for reports and
 * done, one for the long poll, so a report never waits behind a poll.
 */
final class Net {
    private final String server;
    private final String base;
    private final String token;
    private final HttpClient calls;
    private final HttpClient polls;

    Net(String server, String token) {
        this.server = server;
        this.base = "http://" + server + "/v1/";
        this.token = token;
        this.calls = client("flymc-http");
        this.polls = client("flymc-poll-http");
    }

    /**
     * The same server on new connections. The JDK's client cannot close its pooled ones (before
     * Java 21): they stay idle, unused, and are dropped with the old client; a copy of this
     * process restored from a snapshot finds them dead and never touches them.
     */
    Net fresh() {
        return new Net(server, token);
    }

    private static HttpClient client(String name) {
        AtomicInteger n = new AtomicInteger();
        return HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .executor(Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, name + "-" + n.incrementAndGet());
                t.setDaemon(true);
                Hook.agentThreads.add(t);
                return t;
            }))
            .build();
    }

    /** POST a request; returns the parsed answer. Exits the JVM when flymc is gone or refuses us. */
    @SuppressWarnings("unchecked")
    Map<String, Object> post(String endpoint, Map<String, Object> body, boolean poll) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + endpoint))
            .header("Content-Type", "application/json")
            .header("X-FlyMC-Token", token)
            .timeout(Duration.ofSeconds(poll ? 90 : 60))
            .POST(HttpRequest.BodyPublishers.ofString(Json.write(body)))
            .build();
        for (int attempt = 0;; attempt++) {
            try {
                HttpResponse<String> r = (poll ? polls : calls).send(req, HttpResponse.BodyHandlers.ofString());
                int st = r.statusCode();
                if (st == 200) {
                    return (Map<String, Object>) Json.parse(r.body());
                }
                if (st == 401 || (st == 409 && r.body().contains("\"stale\""))) {
                    // flymc ended the run or replaced this incarnation: this process is a leftover.
                    Hook.log("event server refused us (" + st + "): " + r.body() + "; exiting");
                    Runtime.getRuntime().halt(75);
                }
                throw new IllegalStateException("flymc refused " + endpoint + " (" + st + "): " + r.body());
            } catch (ConnectException e) {
                Hook.log("event server is gone (" + e + "); exiting");
                Runtime.getRuntime().halt(75);
            } catch (java.io.IOException e) {
                // The server closed the connection before answering: an idle kept-alive one, or a
                // new one closed in a burst of other connections (hooks/PROTOCOL.md,
                // "Connections"). Retry on a new one, after a pause that outlasts such a burst.
                if (attempt >= 4) {
                    Hook.log("event server unreachable (" + e + "); exiting");
                    Runtime.getRuntime().halt(75);
                }
                if (attempt > 0) {
                    try {
                        Thread.sleep(5L << (2 * attempt));
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted talking to flymc");
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted talking to flymc");
            }
        }
    }
}
