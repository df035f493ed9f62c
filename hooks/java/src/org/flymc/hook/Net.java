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
    private final String base;
    private final String token;
    private final HttpClient calls;
    private final HttpClient polls;

    Net(String server, String token) {
        this.base = "http://" + server + "/v1/";
        this.token = token;
        this.calls = client("flymc-http");
        this.polls = client("flymc-poll-http");
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
                if (attempt >= 3) {
                    Hook.log("event server unreachable (" + e + "); exiting");
                    Runtime.getRuntime().halt(75);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted talking to flymc");
            }
        }
    }
}
