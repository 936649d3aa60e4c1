"""Cross-play: teams of partners that have never met (`coordbench crossplay FAMILY`)."""
