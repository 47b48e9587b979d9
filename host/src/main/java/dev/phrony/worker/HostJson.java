package dev.phrony.worker;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * The host's one mapper for the JSON it prints and reads back (list-handlers, check, config,
 * outbox, the reload and handlers routes): indented output, Jackson's defaults otherwise. Two
 * mappers differ on purpose and keep their own: the descriptor hash's canonical form ({@code
 * plugin.DescriptorHash}) and dev's exact numbers ({@code dev.Json}).
 */
public final class HostJson {
  public static final ObjectMapper MAPPER =
      JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

  private HostJson() {}
}
