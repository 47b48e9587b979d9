package dev.phrony.plugins.weather;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolParam;
import dev.phrony.worker.api.TypedToolHandler;
import java.util.List;
import java.util.Locale;

/**
 * {@code weather.get-forecast@1.0.0}: a deterministic three-day forecast for a city, computed from
 * the city's name so that examples and tests need no network.
 */
public final class GetForecast extends TypedToolHandler<GetForecast.Args, GetForecast.Forecast> {

  /**
   * Arguments: the city to forecast. The worker checks every call against the schema generated from
   * this record, so a missing, blank or non-text city never reaches {@link #handle}.
   */
  public record Args(
      @ToolParam(description = "the city to forecast", pattern = "\\S", examples = "Oslo")
          String city) {}

  /** One day of the forecast. */
  public record Day(int day, String conditions, int highC, int lowC) {}

  /** The result. */
  public record Forecast(String city, List<Day> days) {}

  private static final List<String> CONDITIONS =
      List.of("sunny", "partly cloudy", "cloudy", "light rain", "rain", "snow", "windy");

  public GetForecast() {
    super(Args.class);
  }

  @Override
  public ToolDescriptor descriptor() {
    return ToolDescriptor.builder("weather.get-forecast")
        .version("1.0.0")
        .sideEffectClass(SideEffectClass.READ_ONLY)
        .maxConcurrency(32)
        .description("Three-day forecast for a city (deterministic demo data)")
        .build(); // the input schema is generated from Args
  }

  @Override
  protected Forecast handle(Args args, ToolCall call) {
    String city = args.city().strip();
    int seed = city.toLowerCase(Locale.ROOT).hashCode();
    var days = new java.util.ArrayList<Day>(3);
    for (int d = 1; d <= 3; d++) {
      int mix = Math.floorMod(seed * 31 + d * 17, 1_000_003);
      int low = Math.floorMod(mix, 25) - 8;
      int high = low + 3 + Math.floorMod(mix / 25, 9);
      days.add(new Day(d, CONDITIONS.get(Math.floorMod(mix / 7, CONDITIONS.size())), high, low));
    }
    return new Forecast(city, List.copyOf(days));
  }
}
