"""The knowledge room: correcting and navigating sections (the lifecycle), skills,
contradictions and near-duplicates."""
