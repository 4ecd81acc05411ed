"""Dashboard over asv results: data loading, regression detection, figures, pages."""
