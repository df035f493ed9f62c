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
 * The hook protocol (hooks/PROTOCOL.md): reports and done on a blocking socket of their own
 * ({@link Http}, no thread hand-offs), the long poll over the JDK's HTTP client, so a report
 * never waits behind a poll.
 */
final class Net {
    private final String base;
    private final String token;
    private final Http calls;
    private final HttpClient polls;

    Net(String server, String token) {
        this.base = "http://" + server + "/v1/";
        this.token = token;
        this.calls = new Http(server);
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
        String json = Json.write(body);
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + endpoint))
            .header("Content-Type", "application/json")
            .header("X-FlyMC-Token", token)
            .timeout(Duration.ofSeconds(poll ? 90 : 60))
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build();
        for (int attempt = 0;; attempt++) {
            try {
                int st;
                String answer;
                if (poll) {
                    HttpResponse<String> r = polls.send(req, HttpResponse.BodyHandlers.ofString());
                    st = r.statusCode();
                    answer = r.body();
                } else {
                    Http.Answer a = calls.post("/v1/" + endpoint, token, json);
                    st = a.status;
                    answer = a.body;
                }
                if (st == 200) {
                    return (Map<String, Object>) Json.parse(answer);
                }
                if (st == 401 || (st == 409 && answer.contains("\"stale\""))) {
                    // flymc ended the run or replaced this incarnation: this process is a leftover.
                    Hook.log("event server refused us (" + st + "): " + answer + "; exiting");
                    Runtime.getRuntime().halt(75);
                }
                throw new IllegalStateException("flymc refused " + endpoint + " (" + st + "): " + answer);
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
