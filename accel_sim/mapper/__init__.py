"""The mapper, a pipeline stage: searches an engine's mapspace (`EngineBase.mapspace`) with its exact scorer."""
from __future__ import annotations

from accel_sim.mapper.loop_nest import loop_nest_text
from accel_sim.mapper.rooms import fits_room, room_may_bind
from accel_sim.mapper.search import MappedCost, MapperCache, SearchResult, SearchStats, best_cost, search, search_many
from accel_sim.mapper.stage import OBJECTIVES, best_options, ranking, score

__all__ = ["OBJECTIVES", "MappedCost", "MapperCache", "SearchResult", "SearchStats", "best_cost", "best_options",
           "fits_room", "loop_nest_text", "ranking", "room_may_bind", "score", "search", "search_many"]
