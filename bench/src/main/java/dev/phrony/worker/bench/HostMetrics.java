package dev.phrony.worker.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/** A host's Prometheus {@code /metrics}, for rows that read what the host counted itself. */
final class HostMetrics {
  private final URI uri;
  private final HttpClient client = HttpClient.newHttpClient();

  /** The metrics of a host run with {@code --http 127.0.0.1:0} (waits for its endpoint). */
  HostMetrics(HostProcess host) {
    this.uri = URI.create("http://127.0.0.1:" + host.httpPort(Hosts.START_TIMEOUT) + "/metrics");
  }

  /** The sum of {@code name}'s samples over all their labels; 0 when there are none. */
  double sum(String name) throws IOException, InterruptedException {
    String text =
        client
            .send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString())
            .body();
    double sum = 0;
    for (String line : text.lines().toList()) {
      if (line.startsWith(name + "{") || line.startsWith(name + " ")) {
        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return sum;
  }

  /** As {@link #sum}, NaN when the host does not answer (it may have died). */
  double sumOrNaN(String name) {
    try {
      return sum(name);
    } catch (IOException e) {
      return Double.NaN;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Double.NaN;
    }
  }
}
